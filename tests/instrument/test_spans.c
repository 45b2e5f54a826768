/*
 * Unit tests of the tag recorder (lib/core/spans.c) through the public macros
 * of include/collkit/spans.h: categories by name, recording on and off,
 * nesting depth and order, steps given and inherited, the outermost-category
 * flag, unbalanced ENDs and their recovery, a stack deeper than the recorder
 * keeps, a full record buffer, and a full name table. No MPI call is made.
 */
#include <collkit/spans.h>

#include <stdio.h>
#include <string.h>

#ifndef CK_INSTRUMENT
#error "build this test with CK_INSTRUMENT (it links collkit_instr)"
#endif

static int failures;

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                         \
        }                                                                       \
    } while (0)

static const ck_span_record *rec(size_t i) { return &ck_spans_records()[i]; }

static int is(size_t i, const char *name, int step, int depth)
{
    if (i >= ck_spans_count()) return 0;
    const ck_span_record *r = rec(i);
    return strcmp(ck_span_name(r->span), name) == 0 && r->step == step && r->depth == depth &&
           r->start_ns <= r->end_ns;
}

static void test_categories(void)
{
    CHECK(ck_span_category_of(ck_span_intern("comm")) == CK_CAT_COMM);
    CHECK(ck_span_category_of(ck_span_intern("comm.exchange")) == CK_CAT_COMM);
    CHECK(ck_span_category_of(ck_span_intern("communicate")) == CK_CAT_PHASE);
    CHECK(ck_span_category_of(ck_span_intern("reduce")) == CK_CAT_REDUCE);
    CHECK(ck_span_category_of(ck_span_intern("reduce_scatter")) == CK_CAT_PHASE);
    CHECK(ck_span_category_of(ck_span_intern("reduce.local")) == CK_CAT_REDUCE);
    CHECK(ck_span_category_of(ck_span_intern("copy.stage")) == CK_CAT_COPY);
    CHECK(ck_span_category_of(ck_span_intern("step")) == CK_CAT_PHASE);
    CHECK(ck_span_category_of(ck_span_intern("allgather.fold")) == CK_CAT_PHASE);
    /* Interning is idempotent. */
    CHECK(ck_span_intern("comm") == ck_span_intern("comm"));
    CHECK(ck_span_intern("step") != ck_span_intern("comm"));
    CHECK(ck_span_name(-1) == NULL);
}

static int evaluated;
static int side_effect(int v)
{
    evaluated++;
    return v;
}

static void test_enable(void)
{
    ck_spans_reset();
    ck_spans_enable(0);
    CK_SPAN_BEGIN("phase.off");
    CK_SPAN_BEGIN_STEP("step", side_effect(1));
    CK_SPAN_END("step");
    CK_SPAN_END("phase.off");
    CHECK(ck_spans_count() == 0);
    CHECK(ck_spans_open() == 0);
    CHECK(evaluated == 0); /* the step expression only runs while recording */
    ck_spans_enable(1);
    CK_SPAN_BEGIN_STEP("step", side_effect(2));
    CK_SPAN_END("step");
    CHECK(evaluated == 1);
    CHECK(ck_spans_count() == 1 && is(0, "step", 2, 0));
    ck_spans_enable(0);
    CK_SPAN_BEGIN("step");
    CK_SPAN_END("step");
    CHECK(ck_spans_count() == 1);
    ck_spans_enable(1);
}

static void test_nesting(void)
{
    ck_spans_reset();
    CK_SPAN_BEGIN("allreduce");              /* phase, no step */
    CK_SPAN_BEGIN_STEP("step", 3);           /* step 3 */
    CK_SPAN_BEGIN("comm");                   /* inherits 3 */
    CK_SPAN_END("comm");
    CK_SPAN_BEGIN("reduce");                 /* inherits 3 */
    CK_SPAN_END("reduce");
    CK_SPAN_END("step");
    CK_SPAN_BEGIN_STEP("step", 4);
    CK_SPAN_BEGIN_STEP("comm", 7);           /* own step wins */
    CK_SPAN_END("comm");
    CK_SPAN_END("step");
    CK_SPAN_BEGIN("copy");                   /* back to no step */
    CK_SPAN_END("copy");
    CK_SPAN_END("allreduce");
    CHECK(ck_spans_count() == 7);
    /* Written at END: innermost first. */
    CHECK(is(0, "comm", 3, 2));
    CHECK(is(1, "reduce", 3, 2));
    CHECK(is(2, "step", 3, 1));
    CHECK(is(3, "comm", 7, 2));
    CHECK(is(4, "step", 4, 1));
    CHECK(is(5, "copy", -1, 1));
    CHECK(is(6, "allreduce", -1, 0));
    /* Children lie inside their parents, siblings in order. */
    CHECK(rec(2)->start_ns <= rec(0)->start_ns && rec(1)->end_ns <= rec(2)->end_ns);
    CHECK(rec(0)->end_ns <= rec(1)->start_ns);
    CHECK(rec(2)->end_ns <= rec(4)->start_ns);
    CHECK(rec(6)->start_ns <= rec(2)->start_ns && rec(5)->end_ns <= rec(6)->end_ns);
    for (size_t i = 0; i < 7; i++) CHECK(rec(i)->nested == 0);
    CHECK(ck_spans_unbalanced() == 0 && ck_spans_dropped() == 0 && ck_spans_open() == 0);

    /* A category tag inside another is flagged, so a breakdown counts only
     * the outermost; a phase in between does not hide the outer one. */
    ck_spans_reset();
    CK_SPAN_BEGIN("copy.stage");
    CK_SPAN_BEGIN("phase.inner");
    CK_SPAN_BEGIN("comm");
    CK_SPAN_END("comm");
    CK_SPAN_END("phase.inner");
    CK_SPAN_END("copy.stage");
    CK_SPAN_BEGIN("comm");
    CK_SPAN_END("comm");
    CHECK(ck_spans_count() == 4);
    CHECK(is(0, "comm", -1, 2) && rec(0)->nested == 1);
    CHECK(is(1, "phase.inner", -1, 1) && rec(1)->nested == 1);
    CHECK(is(2, "copy.stage", -1, 0) && rec(2)->nested == 0);
    CHECK(is(3, "comm", -1, 0) && rec(3)->nested == 0);
}

static void test_unbalanced(void)
{
    /* END with nothing open: counted, ignored. */
    ck_spans_reset();
    CK_SPAN_END("step");
    CHECK(ck_spans_unbalanced() == 1 && ck_spans_count() == 0 && ck_spans_open() == 0);

    /* END of an outer tag while an inner one is open: the outer closes, the
     * inner (its END skipped) is abandoned; one mismatch. */
    ck_spans_reset();
    CK_SPAN_BEGIN("outer");
    CK_SPAN_BEGIN("inner");
    CK_SPAN_END("outer");
    CHECK(ck_spans_unbalanced() == 1 && ck_spans_count() == 1 && is(0, "outer", -1, 0));
    CHECK(ck_spans_open() == 0);

    /* END naming no open tag: counted, the open one stays open. */
    ck_spans_reset();
    CK_SPAN_BEGIN("outer");
    CK_SPAN_END("inner");
    CHECK(ck_spans_unbalanced() == 1 && ck_spans_count() == 0 && ck_spans_open() == 1);
    CK_SPAN_END("outer");
    CHECK(ck_spans_unbalanced() == 1 && ck_spans_count() == 1 && ck_spans_open() == 0);

    /* Deeper than the stack: the extra BEGINs count as unbalanced, their
     * ENDs are absorbed, the rest records normally. */
    ck_spans_reset();
    const int extra = 5, depth = CK_SPAN_MAX_DEPTH + extra;
    for (int i = 0; i < depth; i++) CK_SPAN_BEGIN_STEP("step", i);
    CHECK(ck_spans_open() == depth);
    for (int i = 0; i < depth; i++) CK_SPAN_END("step");
    CHECK(ck_spans_unbalanced() == (uint64_t)extra);
    CHECK(ck_spans_count() == (size_t)CK_SPAN_MAX_DEPTH && ck_spans_open() == 0);
    CHECK(is(0, "step", CK_SPAN_MAX_DEPTH - 1, CK_SPAN_MAX_DEPTH - 1));
    CHECK(is(CK_SPAN_MAX_DEPTH - 1, "step", 0, 0));

    /* reset clears counters and the stack. */
    ck_spans_reset();
    CHECK(ck_spans_unbalanced() == 0 && ck_spans_count() == 0 && ck_spans_open() == 0);
}

static void test_overflow(void)
{
    CHECK(ck_spans_init(3) == 0);
    ck_spans_enable(1);
    for (int i = 0; i < 10; i++) {
        CK_SPAN_BEGIN_STEP("step", i);
        CK_SPAN_END("step");
    }
    CHECK(ck_spans_count() == 3 && ck_spans_dropped() == 7);
    CHECK(is(0, "step", 0, 0) && is(2, "step", 2, 0));
    /* A dropped record still keeps the stack right. */
    CK_SPAN_BEGIN("outer");
    CK_SPAN_BEGIN("inner");
    CK_SPAN_END("inner");
    CK_SPAN_END("outer");
    CHECK(ck_spans_dropped() == 9 && ck_spans_unbalanced() == 0 && ck_spans_open() == 0);
    /* ck_spans_init turns recording off. */
    CHECK(ck_spans_init(1 << 10) == 0);
    CHECK(ck_spans_on == 0);
    ck_spans_enable(1);
}

static void test_name_table(void)
{
    static char names[CK_SPAN_MAX_NAMES + 10][16];
    int first = ck_span_names();
    int last = -1;
    for (int i = 0; i < CK_SPAN_MAX_NAMES + 10; i++) {
        snprintf(names[i], sizeof names[i], "name%d", i);
        last = ck_span_intern(names[i]);
        CHECK(last >= 0 && last < CK_SPAN_MAX_NAMES);
    }
    CHECK(first < CK_SPAN_MAX_NAMES - 1);
    CHECK(ck_span_names() == CK_SPAN_MAX_NAMES);
    CHECK(last == CK_SPAN_MAX_NAMES - 1);
    CHECK(strcmp(ck_span_name(last), "(too many tag names)") == 0);
    CHECK(ck_span_category_of(last) == CK_CAT_PHASE);
    /* Known names still resolve to their own ids. */
    CHECK(strcmp(ck_span_name(ck_span_intern("comm")), "comm") == 0);
}

int main(void)
{
    CHECK(ck_spans_init(1 << 10) == 0);
    CHECK(ck_spans_on == 0);
    test_categories();
    test_enable();
    test_nesting();
    test_unbalanced();
    test_overflow();
    test_name_table();
    ck_spans_finalize();
    if (failures) {
        fprintf(stderr, "test_tags: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_tags: all checks passed\n");
    return 0;
}
