! The eight collectives libcollkit-preload intercepts, called through
! `use mpi_f08` with checkable data: MPI_IN_PLACE (allreduce, and reduce at
! the root), MPI_BOTTOM with a datatype of absolute addresses, arguments not
! significant at a rank, and ierror both given and omitted. Run under the
! preload with algorithms forced (sweep.py --program fortran_f08).
program ck_fortran_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 7, k = 3
  integer :: ierr, rank, p, root, i, j, r, bad, total
  integer :: a(n), b(n), c(n)
  integer, allocatable :: g(:), s(:), t(:)
  double precision :: x(5), y(5)
  integer(kind=MPI_ADDRESS_KIND) :: addr(1)
  integer :: lens(1)
  type(MPI_Comm) :: comm
  type(MPI_Datatype) :: absolute

  call MPI_Init()
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank)
  call MPI_Comm_size(comm, p)
  root = p - 1
  bad = 0
  allocate(g(k*p), s(k*p), t(k*p))

  ! bcast from the last rank
  x = dble(rank)
  if (rank == root) x = (/ (dble(i), i = 1, 5) /)
  call MPI_Bcast(x, 5, MPI_DOUBLE_PRECISION, root, comm, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, 5
    if (x(i) /= dble(i)) bad = bad + 1
  end do

  ! reduce, out of place, then in place at the root (the other ranks' receive
  ! buffer is not significant: a scalar stands for it)
  a = (/ (rank + i, i = 1, n) /)
  b = -1
  call MPI_Reduce(a, b, n, MPI_INTEGER, MPI_SUM, root, comm, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  c = a
  if (rank == root) then
    call MPI_Reduce(MPI_IN_PLACE, c, n, MPI_INTEGER, MPI_SUM, root, comm)
    do i = 1, n
      if (b(i) /= p*(p-1)/2 + p*i .or. c(i) /= b(i)) bad = bad + 1
    end do
  else
    call MPI_Reduce(c, j, n, MPI_INTEGER, MPI_SUM, root, comm)
    if (any(c /= a)) bad = bad + 1
  end if

  ! allreduce, out of place and in place
  call MPI_Allreduce(a, b, n, MPI_INTEGER, MPI_SUM, comm, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INTEGER, MPI_SUM, comm)
  do i = 1, n
    if (b(i) /= p*(p-1)/2 + p*i .or. a(i) /= b(i)) bad = bad + 1
  end do

  ! reduce_scatter_block: block r of the sum lands on rank r
  s = (/ (rank*1000 + i, i = 1, k*p) /)
  c = -1
  call MPI_Reduce_scatter_block(s, c, k, MPI_INTEGER, MPI_SUM, comm, ierr)
  do i = 1, k
    if (c(i) /= 1000*p*(p-1)/2 + p*(k*rank + i)) bad = bad + 1
  end do

  ! gather to the root: rank r's k values at block r
  a(1:k) = (/ (rank*100 + i, i = 1, k) /)
  g = -1
  call MPI_Gather(a, k, MPI_INTEGER, g, k, MPI_INTEGER, root, comm, ierr)
  if (rank == root) then
    do r = 0, p - 1
      do i = 1, k
        if (g(k*r + i) /= r*100 + i) bad = bad + 1
      end do
    end do
  end if

  ! scatter from the root: block r to rank r (the send side is not
  ! significant elsewhere: count -1 and a scalar stand for it)
  if (rank == root) then
    s = (/ ((r*100 + i, i = 1, k), r = 0, p - 1) /)
    call MPI_Scatter(s, k, MPI_INTEGER, b, k, MPI_INTEGER, root, comm, ierr)
  else
    call MPI_Scatter(j, -1, MPI_INTEGER, b, k, MPI_INTEGER, root, comm, ierr)
  end if
  do i = 1, k
    if (b(i) /= rank*100 + i) bad = bad + 1
  end do

  ! allgather: every rank gets every rank's block
  a(1:k) = (/ (rank*10 + i, i = 1, k) /)
  g = -1
  call MPI_Allgather(a, k, MPI_INTEGER, g, k, MPI_INTEGER, comm)
  do r = 0, p - 1
    do i = 1, k
      if (g(k*r + i) /= r*10 + i) bad = bad + 1
    end do
  end do

  ! alltoall: block r of rank q goes to block q of rank r
  s = (/ ((rank*1000 + r*10 + i, i = 1, k), r = 0, p - 1) /)
  t = -1
  call MPI_Alltoall(s, k, MPI_INTEGER, t, k, MPI_INTEGER, comm, ierr)
  do r = 0, p - 1
    do i = 1, k
      if (t(k*r + i) /= r*1000 + rank*10 + i) bad = bad + 1
    end do
  end do

  ! MPI_BOTTOM: bcast y through a datatype holding its absolute address
  y = -dble(rank)
  if (rank == root) y = (/ (10.0d0*i, i = 1, 5) /)
  call MPI_Get_address(y, addr(1))
  lens(1) = 5
  call MPI_Type_create_hindexed(1, lens, addr, MPI_DOUBLE_PRECISION, absolute)
  call MPI_Type_commit(absolute)
  call MPI_F_sync_reg(y)
  call MPI_Bcast(MPI_BOTTOM, 1, absolute, root, comm, ierr)
  ! the compiler does not know the call wrote y: MPI-3's remedy, 17.1.17
  call MPI_F_sync_reg(y)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, 5
    if (y(i) /= 10.0d0*i) bad = bad + 1
  end do
  call MPI_Type_free(absolute)

  call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, comm)
  if (rank == 0) print '(a,i0,a)', 'fortran mpi_f08: ', total, ' failures'
  deallocate(g, s, t)
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program ck_fortran_f08
