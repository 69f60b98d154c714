! The Fortran module beyond the example (tests/test_fortran.sh builds it against the installed
! module): the communicator as an integer, a refused option with its message, a call out of order,
! a complex unsymmetric matrix (LU) with two right-hand sides solved and refined in 2-D arrays,
! statistics by name. Every rank runs it; rank 0 holds the matrix and the right-hand sides.
program test_fortran_api
    use mpi_f08
    use canopy
    implicit none
    integer(canopy_ik), parameter :: n = 60
    integer(canopy_ik) :: j, p, colptr(n + 1), rowind(3 * n)
    complex(8) :: values(3 * n), b(n, 2), x(n, 2), r(n, 2)
    type(canopy_solver) :: s, bad
    integer :: ierr, rank, mpierr, provided, failures
    real(8) :: res

    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, mpierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, mpierr)
    failures = 0

    ! a refused option: an error and a message that names it
    call canopy_create(bad, MPI_COMM_WORLD%MPI_VAL, ierr, options="threads=two")
    if (ierr /= CANOPY_ERR_ARGUMENT) call fail("a bad option was not refused")

    call canopy_create(s, MPI_COMM_WORLD%MPI_VAL, ierr, options="threads=1, bind=none; ordering=scotch")
    if (ierr < 0) call fail("canopy_create: " // trim(canopy_error(s)))

    ! tridiagonal, complex, unsymmetric: (4 + i) on the diagonal, -1 below, -1 + 0.5i above
    p = 1
    do j = 1, n
        colptr(j) = p
        if (j > 1) then
            rowind(p) = j - 1; values(p) = cmplx(-1d0, 0.5d0, 8); p = p + 1
        end if
        rowind(p) = j; values(p) = cmplx(4d0, 1d0, 8); p = p + 1
        if (j < n) then
            rowind(p) = j + 1; values(p) = cmplx(-1d0, 0d0, 8); p = p + 1
        end if
    end do
    colptr(n + 1) = p
    if (rank == 0) then
        call canopy_set_matrix(s, n, colptr, rowind, values(1:p - 1), CANOPY_KIND_GENERAL, ierr)
    else
        call canopy_set_matrix(s, ierr)
    end if
    if (ierr < 0) call fail("canopy_set_matrix: " // trim(canopy_error(s)))

    ! out of order: solve before the factorization
    if (rank == 0) then
        x = 1
        call canopy_solve(s, x, ierr)
    else
        call canopy_solve(s, ierr)
    end if
    if (ierr /= CANOPY_ERR_PHASE) call fail("canopy_solve before canopy_factorize was not refused")
    if (index(canopy_error(s), "canopy_factorize") == 0) call fail("the phase error does not say what is missing")

    call canopy_analyze(s, ierr)
    if (ierr < 0) call fail("canopy_analyze: " // trim(canopy_error(s)))
    call canopy_factorize(s, ierr)
    if (ierr < 0) call fail("canopy_factorize: " // trim(canopy_error(s)))
    if (rank == 0) then
        do j = 1, n
            b(j, 1) = cmplx(real(j, 8), 1d0, 8)
            b(j, 2) = cmplx(1d0, -real(mod(j, 5), 8), 8)
        end do
        x = b
        call canopy_solve(s, x, ierr)
        if (ierr < 0) call fail("canopy_solve: " // trim(canopy_error(s)))
        call canopy_refine(s, b, x, ierr)
        if (ierr < 0) call fail("canopy_refine: " // trim(canopy_error(s)))
        ! r = b - A x, column by column
        r = b
        do j = 1, n
            do p = colptr(j), colptr(j + 1) - 1
                r(rowind(p), :) = r(rowind(p), :) - values(p) * x(j, :)
            end do
        end do
        res = maxval(abs(r)) / maxval(abs(b))
        if (res > 1d-12) call fail("the complex solution's residual is too large")
        if (canopy_stat(s, "nnz_factor") <= 0) call fail("nnz_factor not reported")
        if (canopy_stat(s, "no_such_figure") /= -1) call fail("an unknown figure did not give -1")
        print '(a, es9.2, a, i0)', "complex LU, 2 right-hand sides: relative residual ", res, ", ranks ", &
            int(canopy_stat(s, "ranks"))
    else
        call canopy_solve(s, ierr)
        if (ierr < 0) call fail("canopy_solve: " // trim(canopy_error(s)))
        call canopy_refine(s, ierr)
        if (ierr < 0) call fail("canopy_refine: " // trim(canopy_error(s)))
    end if
    call canopy_destroy(s)
    call canopy_destroy(bad)
    call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, mpierr)
    if (rank == 0) then
        if (failures == 0) then
            print '(a)', "ok"
        else
            print '(a, i0, a)', "FAILED: ", failures, " check(s)"
        end if
    end if
    call MPI_Finalize(mpierr)
    if (failures /= 0) stop 1

contains

    subroutine fail(what)
        character(len=*), intent(in) :: what
        print '(a, i0, a, a)', "rank ", rank, ": FAIL: ", what
        failures = failures + 1
    end subroutine fail

end program test_fortran_api
