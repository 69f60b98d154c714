! A plain Fortran MPI program, as most existing codes are: `use mpi`, `call MPI_Init(ierr)` (thread
! level MPI_THREAD_SINGLE with Open MPI and MPICH), an integer communicator. Canopy runs on any
! number of ranks with its default comm-threads=1 (the calling thread drives MPI while 2 workers
! compute: comm_threads 3 in the statistics): an unsymmetric real matrix (convection-diffusion,
! LU) is solved and refined against the known solution, given on rank 0 and then in pieces
! (columns dealt round-robin). comm-threads=2 (two threads calling MPI at once) is refused on
! every rank with the way out. tests/test_fortran.sh runs it on 1, 2 and 3 ranks.
program test_fortran_init
    use mpi
    use canopy
    implicit none
    integer, parameter :: g = 14
    integer(canopy_ik), parameter :: n = g * g
    integer(canopy_ik) :: colptr(n + 1), rowind(5 * n), j, p
    real(8) :: values(5 * n), xk(n), b(n), x(n)
    type(canopy_solver) :: s
    integer :: ierr, mpierr, rank, nranks, provided, failures

    call MPI_Init(mpierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, mpierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, mpierr)
    call MPI_Query_thread(provided, mpierr)
    failures = 0
    if (rank == 0) print '(a, i0, a, i0, a)', "MPI_Init: thread level ", provided, ", ", nranks, " ranks"

    call build()
    do j = 1, n
        xk(j) = 1 + 0.25d0 * mod(j, 7_canopy_ik) - 0.125d0 * mod(j, 3_canopy_ik)
    end do
    b = 0
    do j = 1, n
        do p = colptr(j), colptr(j + 1) - 1
            b(rowind(p)) = b(rowind(p)) + values(p) * xk(j)
        end do
    end do

    ! the matrix on rank 0
    call canopy_create(s, MPI_COMM_WORLD, ierr, options="threads=2 bind=none cost-cache=fixed")
    if (ierr < 0) then
        call fail("canopy_create under MPI_Init: " // trim(canopy_error(s)))
    else
        if (rank == 0) then
            call canopy_set_matrix(s, n, colptr, rowind, values, CANOPY_KIND_GENERAL, ierr, triangle=CANOPY_TRIANGLE_BOTH)
        else
            call canopy_set_matrix(s, ierr)
        end if
        if (ierr >= 0) call canopy_analyze(s, ierr)
        if (ierr >= 0) call canopy_factorize(s, ierr)
        if (ierr < 0) call fail("centralized: " // trim(canopy_error(s)))
        if (rank == 0) then
            x = b
            call canopy_solve(s, x, ierr)
            if (ierr < 0) call fail("canopy_solve: " // trim(canopy_error(s)))
            if (maxval(abs(x - xk) / xk) > 1d-10) call fail("the centralized solution is wrong")
            call canopy_refine(s, b, x, ierr)
            if (ierr < 0) call fail("canopy_refine: " // trim(canopy_error(s)))
            if (maxval(abs(x - xk) / xk) > 1d-12) call fail("the refined centralized solution is wrong")
            print '(a, es9.2)', "centralized LU: error ", maxval(abs(x - xk) / xk)
        else
            call canopy_solve(s, ierr)
            if (ierr < 0) call fail("canopy_solve: " // trim(canopy_error(s)))
            call canopy_refine(s, ierr)
            if (ierr < 0) call fail("canopy_refine: " // trim(canopy_error(s)))
        end if
        call check_stats(s, "centralized")
    end if
    call canopy_destroy(s)

    call pieces()

    ! two threads calling MPI at once: refused on every rank, with the way out
    call canopy_create(s, MPI_COMM_WORLD, ierr, options="threads=2 bind=none comm-threads=2")
    if (nranks > 1 .and. provided < MPI_THREAD_MULTIPLE) then
        if (ierr /= CANOPY_ERR_MPI) call fail("comm-threads=2 under MPI_Init was not refused")
        if (index(canopy_error(s), "MPI_THREAD_MULTIPLE") == 0 .or. index(canopy_error(s), "comm-threads=1") == 0 &
            .or. index(canopy_error(s), "MPI_Init_thread") == 0) &
            call fail("the refusal does not say what is needed and how: " // trim(canopy_error(s)))
        if (rank == 0) print '(a, a)', "comm-threads=2 refused: ", trim(canopy_error(s))
    else
        if (ierr < 0) call fail("comm-threads=2: " // trim(canopy_error(s)))
    end if
    call canopy_destroy(s)

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

    ! 2-D convection-diffusion on a g x g grid, full CSC, 1-based: 4 on the diagonal, -1.3 / -0.7
    ! to the west / east neighbours, -1.1 / -0.9 to the south / north ones
    subroutine build()
        integer(canopy_ik) :: c, gx, gy
        p = 1
        do c = 1, n
            gx = mod(c - 1, int(g, canopy_ik))
            gy = (c - 1) / g
            colptr(c) = p
            if (gy > 0) call put(c - g, -0.9d0)
            if (gx > 0) call put(c - 1, -0.7d0)
            call put(c, 4d0)
            if (gx < g - 1) call put(c + 1, -1.3d0)
            if (gy < g - 1) call put(c + g, -1.1d0)
        end do
        colptr(n + 1) = p
    end subroutine build

    subroutine put(row, v)
        integer(canopy_ik), intent(in) :: row
        real(8), intent(in) :: v
        rowind(p) = row
        values(p) = v
        p = p + 1
    end subroutine put

    ! every rank its columns and the same rows of b and x
    subroutine pieces()
        integer(canopy_ik), allocatable :: cols(:), cp(:), ri(:), rows(:)
        real(8), allocatable :: v(:), bl(:), xl(:)
        integer(canopy_ik) :: c, nl, k, q
        type(canopy_solver) :: t
        real(8) :: e
        nl = 0
        do c = 1, n
            if (mod(c - 1, int(nranks, canopy_ik)) == rank) nl = nl + 1
        end do
        allocate(cols(nl), cp(nl + 1), ri(5 * nl), v(5 * nl), rows(nl), bl(nl), xl(nl))
        k = 1
        q = 0
        do c = 1, n
            if (mod(c - 1, int(nranks, canopy_ik)) /= rank) cycle
            q = q + 1
            cols(q) = c
            rows(q) = c
            bl(q) = b(c)
            cp(q) = k
            ri(k:k + colptr(c + 1) - colptr(c) - 1) = rowind(colptr(c):colptr(c + 1) - 1)
            v(k:k + colptr(c + 1) - colptr(c) - 1) = values(colptr(c):colptr(c + 1) - 1)
            k = k + colptr(c + 1) - colptr(c)
        end do
        cp(nl + 1) = k
        call canopy_create(t, MPI_COMM_WORLD, ierr, options="threads=2 bind=none cost-cache=fixed")
        if (ierr < 0) then
            call fail("canopy_create (pieces) under MPI_Init: " // trim(canopy_error(t)))
            return
        end if
        call canopy_set_matrix_distributed(t, n, cols, cp, ri, v(1:k - 1), CANOPY_KIND_GENERAL, ierr, &
            triangle=CANOPY_TRIANGLE_BOTH)
        if (ierr >= 0) call canopy_analyze(t, ierr)
        if (ierr >= 0) call canopy_factorize(t, ierr)
        if (ierr < 0) call fail("pieces: " // trim(canopy_error(t)))
        xl = bl
        call canopy_solve_distributed(t, rows, xl, ierr)
        if (ierr < 0) call fail("canopy_solve_distributed: " // trim(canopy_error(t)))
        call canopy_refine_distributed(t, rows, bl, xl, ierr)
        if (ierr < 0) call fail("canopy_refine_distributed: " // trim(canopy_error(t)))
        e = 0
        do q = 1, nl
            e = max(e, abs(xl(q) - xk(rows(q))) / xk(rows(q)))
        end do
        if (e > 1d-12) call fail("the solution on this rank's rows is wrong")
        call MPI_Allreduce(MPI_IN_PLACE, e, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, mpierr)
        if (rank == 0) print '(a, es9.2)', "in pieces: error ", e
        call check_stats(t, "pieces")
        call canopy_destroy(t)
    end subroutine pieces

    ! below MPI_THREAD_SERIALIZED on several ranks the calling thread drove the messages
    subroutine check_stats(h, what)
        type(canopy_solver), intent(in) :: h
        character(len=*), intent(in) :: what
        if (nranks == 1) return
        if (provided < MPI_THREAD_SERIALIZED .and. int(canopy_stat(h, "comm_threads")) /= 3) &
            call fail(what // ": the calling thread did not drive MPI (comm_threads not 3)")
        if (canopy_stat(h, "comm_msgs") <= 0) call fail(what // ": no message between the ranks")
    end subroutine check_stats

    subroutine fail(what)
        character(len=*), intent(in) :: what
        print '(a, i0, a, a)', "rank ", rank, ": FAIL: ", what
        failures = failures + 1
    end subroutine fail

end program test_fortran_init
