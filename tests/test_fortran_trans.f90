! Transposed solves through the Fortran module (the optional trans of canopy_solve, canopy_refine,
! canopy_solve_distributed and canopy_refine_distributed): A^T x = b and A^H x = b against their
! exact solutions, from the factors of A. A real unsymmetric matrix (where A x = b has another
! solution, so that T matters) and a complex non-Hermitian one (where T and H differ), given on
! rank 0 (1-D and 2-D right-hand sides) and then in pieces (columns dealt round-robin, each rank
! its rows of b and x). A trans out of range, and a trans that differs between ranks in the
! distributed solve, are refused on every rank. tests/test_fortran.sh runs it on 1 and 2 ranks.
program test_fortran_trans
    use mpi_f08
    use canopy
    implicit none
    integer, parameter :: g = 10
    integer(canopy_ik), parameter :: n = g * g
    integer(canopy_ik) :: colptr(n + 1), rowind(5 * n), nnz
    real(8) :: rv(5 * n), rk(n)
    complex(8) :: cv(5 * n), ck(n)
    integer :: rank, nranks, mpierr, provided, failures
    integer(canopy_ik) :: j

    call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, mpierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, mpierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, mpierr)
    failures = 0
    call build()
    do j = 1, n
        rk(j) = 1 + 0.25d0 * mod(j, 7_canopy_ik) - 0.125d0 * mod(j, 3_canopy_ik)
        ck(j) = cmplx(rk(j), 0.5d0 - 0.2d0 * mod(j, 4_canopy_ik), 8)
    end do

    call centralized_real()
    call centralized_complex()
    call pieces_real()
    call pieces_complex()

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

    ! 2-D convection-diffusion on a g x g grid, full CSC, 1-based; the complex values have an
    ! imaginary part of their own in each direction (neither symmetric nor Hermitian)
    subroutine build()
        integer(canopy_ik) :: c, gx, gy
        nnz = 0
        do c = 1, n
            gx = mod(c - 1, int(g, canopy_ik))
            gy = (c - 1) / g
            colptr(c) = nnz + 1
            if (gy > 0) call put(c - g, -0.9d0, cmplx(-0.9d0, 0.3d0, 8))
            if (gx > 0) call put(c - 1, -0.7d0, cmplx(-0.7d0, -0.2d0, 8))
            call put(c, 4d0, cmplx(4d0, 1d0, 8))
            if (gx < g - 1) call put(c + 1, -1.3d0, cmplx(-1.3d0, 0.4d0, 8))
            if (gy < g - 1) call put(c + g, -1.1d0, cmplx(-1.1d0, 0d0, 8))
        end do
        colptr(n + 1) = nnz + 1
    end subroutine build

    subroutine put(row, r, c)
        integer(canopy_ik), intent(in) :: row
        real(8), intent(in) :: r
        complex(8), intent(in) :: c
        nnz = nnz + 1
        rowind(nnz) = row
        rv(nnz) = r
        cv(nnz) = c
    end subroutine put

    ! y = op(A) x for op 'N', 'T' or 'H'
    function rmul(op, x) result(y)
        character, intent(in) :: op
        real(8), intent(in) :: x(n)
        real(8) :: y(n)
        integer(canopy_ik) :: c, p
        y = 0
        do c = 1, n
            do p = colptr(c), colptr(c + 1) - 1
                if (op == 'N') then
                    y(rowind(p)) = y(rowind(p)) + rv(p) * x(c)
                else
                    y(c) = y(c) + rv(p) * x(rowind(p))
                end if
            end do
        end do
    end function rmul

    function cmul(op, x) result(y)
        character, intent(in) :: op
        complex(8), intent(in) :: x(n)
        complex(8) :: y(n)
        integer(canopy_ik) :: c, p
        y = 0
        do c = 1, n
            do p = colptr(c), colptr(c + 1) - 1
                if (op == 'N') then
                    y(rowind(p)) = y(rowind(p)) + cv(p) * x(c)
                else if (op == 'T') then
                    y(c) = y(c) + cv(p) * x(rowind(p))
                else
                    y(c) = y(c) + conjg(cv(p)) * x(rowind(p))
                end if
            end do
        end do
    end function cmul

    subroutine open_solver(s, what)
        type(canopy_solver), intent(out) :: s
        character(len=*), intent(in) :: what
        integer :: ierr
        call canopy_create(s, MPI_COMM_WORLD, ierr, options="threads=2 bind=none cost-cache=fixed")
        if (ierr < 0) call fail(what // ": canopy_create: " // trim(canopy_error(s)))
    end subroutine open_solver

    subroutine centralized_real()
        type(canopy_solver) :: s
        real(8) :: b(n), x(n), b2(n, 2), x2(n, 2)
        integer :: ierr
        call open_solver(s, "real")
        if (rank == 0) then
            call canopy_set_matrix(s, n, colptr, rowind, rv(1:nnz), CANOPY_KIND_GENERAL, ierr, &
                triangle=CANOPY_TRIANGLE_BOTH)
        else
            call canopy_set_matrix(s, ierr)
        end if
        if (ierr >= 0) call canopy_analyze(s, ierr)
        if (ierr >= 0) call canopy_factorize(s, ierr)
        if (ierr < 0) call fail("real: " // trim(canopy_error(s)))
        if (rank == 0) then
            b = rmul('T', rk)
            x = b
            call canopy_solve(s, x, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0) call fail("canopy_solve trans=T: " // trim(canopy_error(s)))
            if (rerr(x) > 1d-10) call fail("real A^T x = b: wrong solution")
            call canopy_refine(s, b, x, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0) call fail("canopy_refine trans=T: " // trim(canopy_error(s)))
            if (rerr(x) > 1d-12) call fail("real A^T x = b refined: wrong solution")
            print '(a, es9.2)', "real A^T x = b: error ", rerr(x)
            ! A x = b has another solution: T mattered
            x = b
            call canopy_solve(s, x, ierr)
            if (ierr < 0 .or. rerr(x) < 1d-3) call fail("real A x = A^T x_k gave x_k: the transpose was not needed")
            ! H is T for real values; the positional form; two right-hand sides
            b2(:, 1) = b
            b2(:, 2) = -2 * b
            x2 = b2
            call canopy_solve(s, x2, ierr, CANOPY_TRANS_H)
            if (ierr < 0) call fail("canopy_solve trans=H (2-D): " // trim(canopy_error(s)))
            call canopy_refine(s, b2, x2, ierr, CANOPY_TRANS_H)
            if (ierr < 0) call fail("canopy_refine trans=H (2-D): " // trim(canopy_error(s)))
            if (rerr(x2(:, 1)) > 1d-12 .or. maxval(abs(x2(:, 2) + 2 * rk)) > 2d-12 * maxval(abs(rk))) &
                call fail("real A^H X = B (2 right-hand sides): wrong solution")
            ! out of range: refused, the message names it
            x = b
            call canopy_solve(s, x, ierr, trans=7)
            if (ierr /= CANOPY_ERR_ARGUMENT) call fail("trans=7 was not refused")
            if (index(canopy_error(s), "trans") == 0) call fail("the refusal of trans=7 does not name it")
        else
            call canopy_solve(s, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0) call fail("canopy_solve trans=T: " // trim(canopy_error(s)))
            call canopy_refine(s, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0) call fail("canopy_refine trans=T: " // trim(canopy_error(s)))
            call canopy_solve(s, ierr)
            call canopy_solve(s, ierr, CANOPY_TRANS_H)
            if (ierr < 0) call fail("canopy_solve trans=H (2-D): " // trim(canopy_error(s)))
            call canopy_refine(s, ierr, CANOPY_TRANS_H)
            if (ierr < 0) call fail("canopy_refine trans=H (2-D): " // trim(canopy_error(s)))
            call canopy_solve(s, ierr, trans=7)
            if (ierr /= CANOPY_ERR_ARGUMENT) call fail("trans=7 was not refused on this rank")
        end if
        call canopy_destroy(s)
    end subroutine centralized_real

    subroutine centralized_complex()
        type(canopy_solver) :: s
        complex(8) :: bt(n), bh(n), x(n), b2(n, 2), x2(n, 2)
        integer :: ierr
        call open_solver(s, "complex")
        if (rank == 0) then
            call canopy_set_matrix(s, n, colptr, rowind, cv(1:nnz), CANOPY_KIND_GENERAL, ierr, &
                triangle=CANOPY_TRIANGLE_BOTH)
        else
            call canopy_set_matrix(s, ierr)
        end if
        if (ierr >= 0) call canopy_analyze(s, ierr)
        if (ierr >= 0) call canopy_factorize(s, ierr)
        if (ierr < 0) call fail("complex: " // trim(canopy_error(s)))
        if (rank == 0) then
            bt = cmul('T', ck)
            bh = cmul('H', ck)
            x = bt
            call canopy_solve(s, x, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0) call fail("complex canopy_solve trans=T: " // trim(canopy_error(s)))
            call canopy_refine(s, bt, x, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0) call fail("complex canopy_refine trans=T: " // trim(canopy_error(s)))
            if (cerr(x) > 1d-12) call fail("complex A^T x = b: wrong solution")
            x = bh
            call canopy_solve(s, x, ierr, trans=CANOPY_TRANS_H)
            if (ierr < 0) call fail("complex canopy_solve trans=H: " // trim(canopy_error(s)))
            if (cerr(x) > 1d-10) call fail("complex A^H x = b: wrong solution")
            call canopy_refine(s, bh, x, ierr, trans=CANOPY_TRANS_H)
            if (ierr < 0) call fail("complex canopy_refine trans=H: " // trim(canopy_error(s)))
            if (cerr(x) > 1d-12) call fail("complex A^H x = b refined: wrong solution")
            print '(a, es9.2)', "complex A^T and A^H: error ", cerr(x)
            ! T and H differ: A^T x = A^H x_k does not give x_k
            x = bh
            call canopy_solve(s, x, ierr, trans=CANOPY_TRANS_T)
            if (ierr < 0 .or. cerr(x) < 1d-3) call fail("complex A^T x = A^H x_k gave x_k: H was taken for T")
            ! two right-hand sides, H: x_k and i x_k
            b2(:, 1) = bh
            b2(:, 2) = (0d0, 1d0) * bh
            x2 = b2
            call canopy_solve(s, x2, ierr, trans=CANOPY_TRANS_H)
            if (ierr < 0) call fail("complex canopy_solve trans=H (2-D): " // trim(canopy_error(s)))
            call canopy_refine(s, b2, x2, ierr, trans=CANOPY_TRANS_H)
            if (ierr < 0) call fail("complex canopy_refine trans=H (2-D): " // trim(canopy_error(s)))
            if (cerr(x2(:, 1)) > 1d-12 .or. cerr((0d0, -1d0) * x2(:, 2)) > 1d-12) &
                call fail("complex A^H X = B (2 right-hand sides): wrong solution")
        else
            call canopy_solve(s, ierr, trans=CANOPY_TRANS_T)
            call canopy_refine(s, ierr, trans=CANOPY_TRANS_T)
            call canopy_solve(s, ierr, trans=CANOPY_TRANS_H)
            call canopy_refine(s, ierr, trans=CANOPY_TRANS_H)
            if (ierr < 0) call fail("complex canopy_refine trans=H: " // trim(canopy_error(s)))
            call canopy_solve(s, ierr, trans=CANOPY_TRANS_T)
            call canopy_solve(s, ierr, trans=CANOPY_TRANS_H)
            call canopy_refine(s, ierr, trans=CANOPY_TRANS_H)
            if (ierr < 0) call fail("complex canopy_refine trans=H (2-D): " // trim(canopy_error(s)))
        end if
        call canopy_destroy(s)
    end subroutine centralized_complex

    ! this rank's columns (round-robin) in CSC over them, and the same rows of vectors
    subroutine my_piece(cols, cp, ri, nl)
        integer(canopy_ik), allocatable, intent(out) :: cols(:), cp(:), ri(:)
        integer(canopy_ik), intent(out) :: nl
        integer(canopy_ik) :: c, k, q, w
        nl = 0
        do c = 1, n
            if (mod(c - 1, int(nranks, canopy_ik)) == rank) nl = nl + 1
        end do
        allocate(cols(nl), cp(nl + 1), ri(5 * nl))
        k = 1
        q = 0
        do c = 1, n
            if (mod(c - 1, int(nranks, canopy_ik)) /= rank) cycle
            q = q + 1
            cols(q) = c
            cp(q) = k
            w = colptr(c + 1) - colptr(c)
            ri(k:k + w - 1) = rowind(colptr(c):colptr(c + 1) - 1)
            k = k + w
        end do
        cp(nl + 1) = k
    end subroutine my_piece

    function piece_values_r(cols) result(v)
        integer(canopy_ik), intent(in) :: cols(:)
        real(8), allocatable :: v(:)
        integer(canopy_ik) :: q
        allocate(v(0))
        do q = 1, size(cols, kind=canopy_ik)
            v = [v, rv(colptr(cols(q)):colptr(cols(q) + 1) - 1)]
        end do
    end function piece_values_r

    function piece_values_c(cols) result(v)
        integer(canopy_ik), intent(in) :: cols(:)
        complex(8), allocatable :: v(:)
        integer(canopy_ik) :: q
        allocate(v(0))
        do q = 1, size(cols, kind=canopy_ik)
            v = [v, cv(colptr(cols(q)):colptr(cols(q) + 1) - 1)]
        end do
    end function piece_values_c

    subroutine pieces_real()
        type(canopy_solver) :: t
        integer(canopy_ik), allocatable :: cols(:), cp(:), ri(:)
        real(8), allocatable :: b(:), x(:), full(:)
        integer(canopy_ik) :: nl
        integer :: ierr, mine
        real(8) :: e
        call my_piece(cols, cp, ri, nl)
        call open_solver(t, "real pieces")
        call canopy_set_matrix_distributed(t, n, cols, cp, ri, piece_values_r(cols), CANOPY_KIND_GENERAL, ierr, &
            triangle=CANOPY_TRIANGLE_BOTH)
        if (ierr >= 0) call canopy_analyze(t, ierr)
        if (ierr >= 0) call canopy_factorize(t, ierr)
        if (ierr < 0) call fail("real pieces: " // trim(canopy_error(t)))
        full = rmul('T', rk)
        b = full(cols)
        x = b
        call canopy_solve_distributed(t, cols, x, ierr, trans=CANOPY_TRANS_T)
        if (ierr < 0) call fail("canopy_solve_distributed trans=T: " // trim(canopy_error(t)))
        call canopy_refine_distributed(t, cols, b, x, ierr, trans=CANOPY_TRANS_T)
        if (ierr < 0) call fail("canopy_refine_distributed trans=T: " // trim(canopy_error(t)))
        e = 0
        if (nl > 0) e = maxval(abs(x - rk(cols)) / abs(rk(cols)))
        if (e > 1d-12) call fail("real pieces, A^T x = b: wrong solution on this rank's rows")
        call MPI_Allreduce(MPI_IN_PLACE, e, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, mpierr)
        if (rank == 0) print '(a, i0, a, es9.2)', "real pieces on ", nranks, " ranks, A^T x = b: error ", e
        ! trans must be the same on every rank
        if (nranks > 1) then
            mine = merge(CANOPY_TRANS_T, CANOPY_TRANS_NONE, rank == 0)
            x = b
            call canopy_solve_distributed(t, cols, x, ierr, trans=mine)
            if (ierr /= CANOPY_ERR_ARGUMENT) call fail("a trans that differs between the ranks was not refused")
        end if
        call canopy_destroy(t)
    end subroutine pieces_real

    subroutine pieces_complex()
        type(canopy_solver) :: t
        integer(canopy_ik), allocatable :: cols(:), cp(:), ri(:)
        complex(8), allocatable :: b(:), x(:), full(:), b2(:, :), x2(:, :)
        integer(canopy_ik) :: nl
        integer :: ierr
        real(8) :: e
        call my_piece(cols, cp, ri, nl)
        call open_solver(t, "complex pieces")
        call canopy_set_matrix_distributed(t, n, cols, cp, ri, piece_values_c(cols), CANOPY_KIND_GENERAL, ierr, &
            triangle=CANOPY_TRIANGLE_BOTH)
        if (ierr >= 0) call canopy_analyze(t, ierr)
        if (ierr >= 0) call canopy_factorize(t, ierr)
        if (ierr < 0) call fail("complex pieces: " // trim(canopy_error(t)))
        e = 0
        ! A^T, then A^H: each against its own right-hand side
        full = cmul('T', ck)
        b = full(cols)
        x = b
        call canopy_solve_distributed(t, cols, x, ierr, trans=CANOPY_TRANS_T)
        if (ierr < 0) call fail("complex canopy_solve_distributed trans=T: " // trim(canopy_error(t)))
        call canopy_refine_distributed(t, cols, b, x, ierr, trans=CANOPY_TRANS_T)
        if (ierr < 0) call fail("complex canopy_refine_distributed trans=T: " // trim(canopy_error(t)))
        if (nl > 0) e = max(e, maxval(abs(x - ck(cols)) / abs(ck(cols))))
        full = cmul('H', ck)
        b = full(cols)
        x = b
        call canopy_solve_distributed(t, cols, x, ierr, trans=CANOPY_TRANS_H)
        if (ierr < 0) call fail("complex canopy_solve_distributed trans=H: " // trim(canopy_error(t)))
        call canopy_refine_distributed(t, cols, b, x, ierr, trans=CANOPY_TRANS_H)
        if (ierr < 0) call fail("complex canopy_refine_distributed trans=H: " // trim(canopy_error(t)))
        if (nl > 0) e = max(e, maxval(abs(x - ck(cols)) / abs(ck(cols))))
        if (e > 1d-12) call fail("complex pieces, A^T or A^H: wrong solution on this rank's rows")
        ! two right-hand sides, H: x_k and i x_k
        allocate(b2(nl, 2))
        b2(:, 1) = b
        b2(:, 2) = (0d0, 1d0) * b
        x2 = b2
        call canopy_solve_distributed(t, cols, x2, ierr, trans=CANOPY_TRANS_H)
        if (ierr < 0) call fail("complex canopy_solve_distributed trans=H (2-D): " // trim(canopy_error(t)))
        if (nl > 0) then
            if (maxval(abs(x2(:, 1) - ck(cols)) / abs(ck(cols))) > 1d-10 .or. &
                maxval(abs((0d0, -1d0) * x2(:, 2) - ck(cols)) / abs(ck(cols))) > 1d-10) &
                call fail("complex pieces, A^H X = B (2 right-hand sides): wrong solution")
        end if
        ! T and H differ: A^T x = A^H x_k does not give x_k (somewhere)
        x = b
        call canopy_solve_distributed(t, cols, x, ierr, trans=CANOPY_TRANS_T)
        block
            real(8) :: d
            d = 0
            if (nl > 0) d = maxval(abs(x - ck(cols)))
            call MPI_Allreduce(MPI_IN_PLACE, d, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, mpierr)
            if (ierr < 0 .or. d < 1d-3) call fail("complex pieces: A^T x = A^H x_k gave x_k")
        end block
        call MPI_Allreduce(MPI_IN_PLACE, e, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, mpierr)
        if (rank == 0) print '(a, i0, a, es9.2)', "complex pieces on ", nranks, " ranks, A^T and A^H: error ", e
        call canopy_destroy(t)
    end subroutine pieces_complex

    real(8) function rerr(x)
        real(8), intent(in) :: x(n)
        rerr = maxval(abs(x - rk) / abs(rk))
    end function rerr

    real(8) function cerr(x)
        complex(8), intent(in) :: x(n)
        cerr = maxval(abs(x - ck) / abs(ck))
    end function cerr

    subroutine fail(what)
        character(len=*), intent(in) :: what
        print '(a, i0, a, a)', "rank ", rank, ": FAIL: ", what
        failures = failures + 1
    end subroutine fail

end program test_fortran_trans
