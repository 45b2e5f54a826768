! allreduce, bcast and alltoall from Fortran through `use mpi`, with and
! without MPI_IN_PLACE; run under libcollkit-preload with algorithms forced.
program ck_fortran_use_mpi
  use mpi
  implicit none
  integer :: ierr, rank, p, i, r, bad, total
  integer, allocatable :: a(:), b(:), s(:), t(:)
  double precision :: x(5), y(5)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  bad = 0
  allocate(a(7), b(7), s(2*p), t(2*p))
  do i = 1, 7
    a(i) = rank + i
  end do
  call MPI_Allreduce(a, b, 7, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, a, 7, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 7
    if (b(i) /= p*(p-1)/2 + p*i .or. a(i) /= b(i)) bad = bad + 1
  end do
  x = dble(rank)
  if (rank == p - 1) x = (/ (dble(i), i = 1, 5) /)
  call MPI_Bcast(x, 5, MPI_DOUBLE_PRECISION, p - 1, MPI_COMM_WORLD, ierr)
  do i = 1, 5
    if (x(i) /= dble(i)) bad = bad + 1
  end do
  y = 1.0d0
  call MPI_Allreduce(MPI_IN_PLACE, y, 5, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(y /= dble(p))) bad = bad + 1
  do i = 1, 2*p
    s(i) = rank*1000 + i
  end do
  call MPI_Alltoall(s, 2, MPI_INTEGER, t, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do r = 0, p - 1
    do i = 1, 2
      if (t(2*r + i) /= r*1000 + 2*rank + i) bad = bad + 1
    end do
  end do
  call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INTEGER, s, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (any(s /= t)) bad = bad + 1
  call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'fortran use mpi: ', total, ' failures'
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program ck_fortran_use_mpi
