! The Fortran module beyond the example (tests/test_fortran.sh builds it against the installed
! module): the communicator as an integer, a refused option with its message, a call out of order,
! a complex unsymmetric matrix (LU) with two right-hand sides solved and refined in 2-D arrays, its
! refactorization with new values, statistics by name; then a matrix given in pieces by every rank
! (columns dealt round-robin), solved and refined on each rank's rows, refactorized with new
! values, and the diagonal of its inverse against the exact one. Every rank runs it.
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

    ! the same pattern, twice the values: the analysis is reused and the solution halves
    if (rank == 0) then
        call canopy_update_values(s, 2 * values(1:colptr(n + 1) - 1), ierr)
    else
        call canopy_update_values(s, ierr)
    end if
    if (ierr < 0) call fail("canopy_update_values: " // trim(canopy_error(s)))
    call canopy_factorize(s, ierr)
    if (ierr < 0) call fail("canopy_factorize (new values): " // trim(canopy_error(s)))
    if (rank == 0) then
        r = b
        call canopy_solve(s, r, ierr)
        if (ierr < 0) call fail("canopy_solve (new values): " // trim(canopy_error(s)))
        if (maxval(abs(2 * r - x)) > 1d-10 * maxval(abs(x))) call fail("twice the matrix did not halve the solution")
    else
        call canopy_solve(s, ierr)
    end if
    call canopy_destroy(s)

    call distributed()
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

    ! tridiag(-1, 2, -1) of order m (SPD), lower triangle, its columns dealt round-robin to the ranks
    subroutine distributed()
        integer(canopy_ik), parameter :: m = 50
        integer(canopy_ik), allocatable :: cols(:), cptr(:), rows(:), ri(:)
        real(8), allocatable :: v(:), rhs(:), sol(:), d(:)
        type(canopy_solver) :: t
        integer :: nranks, q
        integer(canopy_ik) :: c, k, nl
        call MPI_Comm_size(MPI_COMM_WORLD, nranks, mpierr)
        nl = 0
        do c = 1, m
            if (mod(c - 1, int(nranks, canopy_ik)) == rank) nl = nl + 1
        end do
        allocate(cols(nl), cptr(nl + 1), ri(2 * nl), v(2 * nl), rows(nl), rhs(nl), sol(nl))
        k = 1
        q = 0
        do c = 1, m
            if (mod(c - 1, int(nranks, canopy_ik)) /= rank) cycle
            q = q + 1
            cols(q) = c
            cptr(q) = k
            ri(k) = c; v(k) = 2; k = k + 1
            if (c < m) then
                ri(k) = c + 1; v(k) = -1; k = k + 1
            end if
            ! this rank's rows of b = A * ones: 0 inside, 1 at both ends
            rows(q) = c
            rhs(q) = merge(1d0, 0d0, c == 1 .or. c == m)
        end do
        cptr(nl + 1) = k
        call canopy_create(t, MPI_COMM_WORLD, ierr, options="threads=2 bind=none selinv-memory=separate")
        if (ierr < 0) call fail("canopy_create: " // trim(canopy_error(t)))
        call canopy_set_matrix_distributed(t, m, cols, cptr, ri, v(1:k - 1), CANOPY_KIND_SPD, ierr)
        if (ierr < 0) call fail("canopy_set_matrix_distributed: " // trim(canopy_error(t)))
        call canopy_analyze(t, ierr)
        if (ierr < 0) call fail("canopy_analyze (pieces): " // trim(canopy_error(t)))
        call canopy_factorize(t, ierr)
        if (ierr < 0) call fail("canopy_factorize (pieces): " // trim(canopy_error(t)))
        sol = rhs
        call canopy_solve_distributed(t, rows, sol, ierr)
        if (ierr < 0) call fail("canopy_solve_distributed: " // trim(canopy_error(t)))
        call canopy_refine_distributed(t, rows, rhs, sol, ierr)
        if (ierr < 0) call fail("canopy_refine_distributed: " // trim(canopy_error(t)))
        if (nl > 0) then
            if (maxval(abs(sol - 1)) > 1d-10) call fail("the solution on this rank's rows is not ones")
        end if
        ! three times the values: a third of the solution
        call canopy_update_values_distributed(t, 3 * v(1:k - 1), ierr)
        if (ierr < 0) call fail("canopy_update_values_distributed: " // trim(canopy_error(t)))
        call canopy_factorize(t, ierr)
        if (ierr < 0) call fail("canopy_factorize (new pieces): " // trim(canopy_error(t)))
        sol = rhs
        call canopy_solve_distributed(t, rows, sol, ierr)
        if (ierr < 0) call fail("canopy_solve_distributed (new values): " // trim(canopy_error(t)))
        if (nl > 0) then
            if (maxval(abs(3 * sol - 1)) > 1d-10) call fail("three times the matrix did not give a third")
        end if
        ! every row on rank 0, none elsewhere (zero-size arrays): solve and refine alike on every rank
        block
            integer(canopy_ik), allocatable :: all(:)
            real(8), allocatable :: ball(:), xall(:)
            integer(canopy_ik) :: na
            na = merge(m, 0_canopy_ik, rank == 0)
            allocate(all(na), ball(na), xall(na))
            do c = 1, na
                all(c) = c
                ball(c) = merge(1d0, 0d0, c == 1 .or. c == m)
            end do
            xall = ball
            call canopy_solve_distributed(t, all, xall, ierr)
            if (ierr < 0) call fail("canopy_solve_distributed (rows on rank 0): " // trim(canopy_error(t)))
            call canopy_refine_distributed(t, all, ball, xall, ierr)
            if (ierr < 0) call fail("canopy_refine_distributed (rows on rank 0): " // trim(canopy_error(t)))
            if (na > 0) then
                if (maxval(abs(3 * xall - 1)) > 1d-10) call fail("rows on rank 0: not a third")
            end if
        end block
        ! a row out of range is refused on every rank
        if (nl > 0) rows(1) = m + 1
        sol = rhs
        call canopy_solve_distributed(t, rows, sol, ierr)
        if (ierr /= CANOPY_ERR_ARGUMENT) call fail("a row out of range was not refused")
        ! the diagonal of the inverse of 3 tridiag(-1, 2, -1): i (m + 1 - i) / (3 (m + 1))
        if (rank == 0) then
            allocate(d(m))
            call canopy_selinv_diag(t, d, ierr)
            if (ierr < 0) call fail("canopy_selinv_diag: " // trim(canopy_error(t)))
            res = 0
            do c = 1, m
                res = max(res, abs(d(c) - real(c * (m + 1 - c), 8) / (3 * (m + 1))))
            end do
            if (res > 1d-12) call fail("the diagonal of the inverse is wrong")
            print '(a, i0, a, es9.2)', "pieces on ", nranks, " ranks: solved, refactorized; diag(A^-1) error ", res
        else
            call canopy_selinv_diag(t, ierr)
            if (ierr < 0) call fail("canopy_selinv_diag: " // trim(canopy_error(t)))
        end if
        call canopy_destroy(t)
    end subroutine distributed

    subroutine fail(what)
        character(len=*), intent(in) :: what
        print '(a, i0, a, a)', "rank ", rank, ": FAIL: ", what
        failures = failures + 1
    end subroutine fail

end program test_fortran_api
