! A complete Fortran program with Canopy: the 2D Laplacian on an m x m grid (5-point stencil,
! symmetric positive definite, lower triangle in CSC with 1-based indices) assembled on rank 0,
! b = A * ones, solved, refined, and checked against the known solution x = ones. Any number of
! ranks: the others take part in every phase without holding the matrix.
!
!   mpif90 example.f90 $(pkg-config --cflags --libs canopy-fortran) -o example && mpiexec -n 2 ./example
program example
    use mpi_f08
    use canopy
    implicit none
    integer, parameter :: m = 40
    integer(canopy_ik) :: n, nnz, i, j, k, p
    integer(canopy_ik), allocatable :: colptr(:), rowind(:)
    real(8), allocatable :: values(:), b(:), x(:), ax(:)
    type(canopy_solver) :: s
    integer :: ierr, rank, mpierr, provided
    real(8) :: err

    ! Canopy's communication thread calls MPI while the workers compute
    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, mpierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, mpierr)
    n = int(m, canopy_ik) * m
    call canopy_create(s, MPI_COMM_WORLD, ierr, options="threads=2 bind=none")
    call check("canopy_create")

    if (rank == 0) then
        ! lower triangle, column by column: the diagonal, the next point in x, the next row in y
        allocate(colptr(n + 1), rowind(3 * n), values(3 * n))
        p = 1
        do j = 1, n
            colptr(j) = p
            rowind(p) = j; values(p) = 4; p = p + 1
            if (mod(j, int(m, canopy_ik)) /= 0) then
                rowind(p) = j + 1; values(p) = -1; p = p + 1
            end if
            if (j + m <= n) then
                rowind(p) = j + m; values(p) = -1; p = p + 1
            end if
        end do
        colptr(n + 1) = p
        nnz = p - 1
        ! b = A * ones: the row sums of the symmetric matrix
        allocate(b(n), x(n), ax(n))
        b = 0
        do j = 1, n
            do k = colptr(j), colptr(j + 1) - 1
                i = rowind(k)
                b(i) = b(i) + values(k)
                if (i /= j) b(j) = b(j) + values(k)
            end do
        end do
        call canopy_set_matrix(s, n, colptr, rowind, values(1:nnz), CANOPY_KIND_SPD, ierr)
    else
        call canopy_set_matrix(s, ierr)
    end if
    call check("canopy_set_matrix")
    call canopy_analyze(s, ierr)
    call check("canopy_analyze")
    call canopy_factorize(s, ierr)
    call check("canopy_factorize")
    if (rank == 0) then
        x = b
        call canopy_solve(s, x, ierr)
    else
        call canopy_solve(s, ierr)
    end if
    call check("canopy_solve")
    if (rank == 0) then
        call canopy_refine(s, b, x, ierr)
    else
        call canopy_refine(s, ierr)
    end if
    call check("canopy_refine")

    if (rank == 0) then
        err = maxval(abs(x - 1))
        print '(a, i0, a, i0, a, es9.2, a, es9.2)', "n = ", n, ", nnz(L) = ", int(canopy_stat(s, "nnz_factor"), 8), &
            ", backward error ", canopy_stat(s, "backward_error"), ", max |x - 1| = ", err
        if (err > 1d-10 .or. canopy_stat(s, "backward_error") > 1d-12) then
            print '(a)', "FAILED: the solution is not accurate"
            call MPI_Abort(MPI_COMM_WORLD, 1, mpierr)
        end if
        print '(a)', "ok"
    end if
    call canopy_destroy(s)
    call MPI_Finalize(mpierr)

contains

    subroutine check(what)
        character(len=*), intent(in) :: what
        if (ierr < 0) then
            print '(a, ": ", a)', what, trim(canopy_error(s))
            call MPI_Abort(MPI_COMM_WORLD, 1, mpierr)
        end if
    end subroutine check

end program example
