! tests/cmake's Fortran program (Canopy::canopy_fortran): the 1-D Laplacian tridiag(-1, 2, -1)
! of order n, lower triangle in 1-based CSC, on rank 0 (the other ranks take part without it);
! b = A * ones solved and refined, the solution checked against ones (exit status 1 otherwise).
program consumer
    use mpi_f08
    use canopy
    implicit none
    integer(canopy_ik), parameter :: n = 100
    integer(canopy_ik) :: colptr(n + 1), rowind(2 * n - 1), j, p
    real(8) :: values(2 * n - 1), b(n), x(n), err
    type(canopy_solver) :: s
    integer :: ierr, rank, mpierr, provided

    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, mpierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, mpierr)
    call canopy_create(s, MPI_COMM_WORLD, ierr)
    call check("canopy_create")
    if (rank == 0) then
        p = 1
        do j = 1, n
            colptr(j) = p
            rowind(p) = j; values(p) = 2; p = p + 1
            if (j < n) then
                rowind(p) = j + 1; values(p) = -1; p = p + 1
            end if
        end do
        colptr(n + 1) = p
        b = 0
        b(1) = 1
        b(n) = 1
        call canopy_set_matrix(s, n, colptr, rowind, values, CANOPY_KIND_SPD, ierr)
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
        call check("canopy_solve")
        call canopy_refine(s, b, x, ierr)
    else
        call canopy_solve(s, ierr)
        call check("canopy_solve")
        call canopy_refine(s, ierr)
    end if
    call check("canopy_refine")
    if (rank == 0) then
        err = maxval(abs(x - 1))
        print '(a, i0, a, es9.2)', "Fortran: n = ", n, ", max |x - 1| = ", err
        if (.not. (err < 1d-10)) call MPI_Abort(MPI_COMM_WORLD, 1, mpierr)
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

end program consumer
