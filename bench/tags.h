/*
 * Tags of the harness's own point-to-point messages. They travel on the
 * control communicator (a duplicate of the measured one), next to the
 * libcollkit calls the harness makes there (tags 0x6b00 + collective, see
 * CK_TAG in lib/core/ck_core.h); one tag per kind of message keeps a barrier
 * round, a clock ping and a reason text from ever matching each other.
 */
#ifndef CK_BENCH_TAGS_H
#define CK_BENCH_TAGS_H

#define BENCH_TAG_BARRIER 0x6a01 /* dissemination barrier */
#define BENCH_TAG_CLOCK 0x6a02   /* ping-pong clock offset estimation */
#define BENCH_TAG_TEXT 0x6a03    /* a reason string travelling to rank 0 */
#define BENCH_TAG_FLOOR 0x6a05   /* ping-pong of the one-message floor */
#define BENCH_TAG_INSTR 0x6a04   /* a rank's tag sums travelling to rank 0 (collkit-bench-instr) */
/* The launch warm-up (steady.c): on the measured communicator, before any
 * point, so that its connections are the ones set up. */
#define BENCH_TAG_WARMUP 0x6a06

#endif
