! The same calls through include 'mpif.h' (fixed form, the oldest binding).
      program ckfmpif
      implicit none
      include 'mpif.h'
      integer ierr, rank, p, i, r, bad, total
      integer a(7), b(7), s(64), t(64)
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
      bad = 0
      do i = 1, 7
        a(i) = rank + i
      end do
      call MPI_ALLREDUCE(a, b, 7, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      call MPI_ALLREDUCE(MPI_IN_PLACE, a, 7, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      do i = 1, 7
        if (b(i) .ne. p*(p-1)/2 + p*i .or. a(i) .ne. b(i))
     &      bad = bad + 1
      end do
      do i = 1, 7
        a(i) = rank
      end do
      call MPI_BCAST(a, 7, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      do i = 1, 7
        if (a(i) .ne. 0) bad = bad + 1
      end do
      do i = 1, 2*p
        s(i) = rank*1000 + i
      end do
      call MPI_ALLTOALL(s, 2, MPI_INTEGER, t, 2, MPI_INTEGER,
     &                  MPI_COMM_WORLD, ierr)
      do r = 0, p - 1
        do i = 1, 2
          if (t(2*r + i) .ne. r*1000 + 2*rank + i) bad = bad + 1
        end do
      end do
      call MPI_ALLTOALL(MPI_IN_PLACE, 0, MPI_INTEGER, s, 2,
     &                  MPI_INTEGER, MPI_COMM_WORLD, ierr)
      do i = 1, 2*p
        if (s(i) .ne. t(i)) bad = bad + 1
      end do
      call MPI_ALLREDUCE(bad, total, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) print *, 'fortran mpif.h: ', total, ' failures'
      call MPI_FINALIZE(ierr)
      if (total .ne. 0) stop 1
      end
