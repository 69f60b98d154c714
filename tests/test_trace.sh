#!/bin/sh
# canopy-trace end to end on hand-made traces: exact summary numbers (busy %, steals, steals across
# NUMA nodes), a well-formed SVG with one rectangle per task, a PNG whose signature, IHDR, CRCs and
# pixels agree with the SVG, valid Chrome JSON, usage errors exit 2, malformed traces exit 1 with
# "file:line: reason", and mangled traces never crash the reader.
bin=${top_builddir:-.}/canopy-trace
data=${top_srcdir:-.}/tests/data
small=$data/trace-small.txt
tmp=${TMPDIR:-/tmp}/canopy-trace-test.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
have_py=no
command -v python3 >/dev/null 2>&1 && have_py=yes
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
t() { # description, expected exit code, command...
    d=$1; want=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$d: exit $rc, expected $want"; printf '%s\n' "$out" | head -20
    else
        echo "ok: $d"
    fi
}
# description, expected message fragment, trace text: must exit 1 naming the file and a line
bad() {
    printf '%s\n' "$3" > "$tmp/bad.txt"
    out=$("$bin" "$tmp/bad.txt" 2>&1); rc=$?
    case "$out" in
        *"$tmp/bad.txt"*"$2"*) msg=yes ;;
        *) msg=no ;;
    esac
    if [ "$rc" -eq 1 ] && [ "$msg" = yes ]; then echo "ok: rejects $1"; else
        fail "malformed trace ($1): exit $rc, expected 1 and '$2'"; printf '%s\n' "$out" | head -5; fi
}

# ---- usage ----------------------------------------------------------------------------------------
t "--help" 0 "$bin" --help
t "no argument" 2 "$bin"
t "unknown option" 2 "$bin" "$small" --frobnicate
t "option without value" 2 "$bin" "$small" --svg
t "bad width" 2 "$bin" "$small" --width 12
t "width not a number" 2 "$bin" "$small" --width=12px
t "two traces" 2 "$bin" "$small" "$small"
t "missing trace" 1 "$bin" "$tmp/no-such-trace.txt"
t "unknown phase" 1 "$bin" "$small" --phase nosuch
t "phase index out of range" 1 "$bin" "$small" --phase 2
t "unwritable output" 1 "$bin" "$small" --svg "$tmp/no/such/dir.svg"

# ---- summary: the numbers of tests/data/trace-small.txt ---------------------------------------------
out=$("$bin" "$small"); rc=$?
[ "$rc" -eq 0 ] || fail "summary exit $rc"
row() { # phase index, thread or "total" -> that line of the summary table
    printf '%s\n' "$out" | awk -v p="$1" -v t="$2" '/^phase /{ cur = $2 } cur == p && $1 == t { print; exit }'
}
check_row() { # phase, thread, expected fields (from busy_s on)
    got=$(row "$1" "$2" | awk '{ print $4, $5, $6, $7, $8, $9 }')
    if [ "$got" = "$3" ]; then echo "ok: phase $1 thread $2"; else fail "phase $1 thread $2: '$got', expected '$3'"; fi
}
check_row 0 0 "0.900000 90.00 3 0.100000 0 0"
check_row 0 1 "0.450000 45.00 2 0.550000 1 0"
check_row 0 2 "0.700000 70.00 2 0.300000 1 1"
check_row 0 3 "0.300000 30.00 2 0.700000 1 1"
total=$(row 0 total | awk '{ print $2, $3, $4, $5, $6, $7 }')
[ "$total" = "2.350000 58.75 9 1.650000 3 2" ] && echo "ok: phase 0 total" || fail "phase 0 total: '$total'"
check_row 1 1 "0.002000 20.00 1 0.008000 0 0"
total=$(row 1 total | awk '{ print $2, $3, $4, $5, $6, $7 }')
[ "$total" = "0.012000 60.00 3 0.008000 0 0" ] && echo "ok: phase 1 total" || fail "phase 1 total: '$total'"
printf '%s\n' "$out" | grep -q "wall 1.000000 s, predicted 0.800000 s (measured/predicted 1.250)" ||
    fail "predicted vs measured wall time"
printf '%s\n' "$out" | grep -q "task time: predicted 1.750000 s, measured 2.350000 s (measured/predicted 1.343)" ||
    fail "predicted vs measured task time"
printf '%s\n' "$out" | grep -q "predicted: not simulated" || fail "phase without a prediction"
one=$("$bin" "$small" --phase solve)
printf '%s\n' "$one" | grep -q "^phase 1 'solve'" && ! printf '%s\n' "$one" | grep -q "^phase 0" &&
    echo "ok: --phase by name" || fail "--phase solve"
[ "$("$bin" "$small" --phase 1)" = "$one" ] && echo "ok: --phase by index" || fail "--phase 1"
if command -v gzip >/dev/null 2>&1; then
    gzip -c "$small" > "$tmp/small.txt.gz"
    [ "$("$bin" "$tmp/small.txt.gz" | tail -n +2)" = "$(printf '%s\n' "$out" | tail -n +2)" ] &&
        echo "ok: gzip trace" || fail "gzip trace"
fi

# ---- charts and Chrome trace ------------------------------------------------------------------------
t "charts" 0 "$bin" "$small" --phase factorize --svg "$tmp/g.svg" --png "$tmp/g.png" --chrome "$tmp/g.json" --width 800
svg=$tmp/g.svg
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$svg" && echo "ok: SVG well-formed (xmllint)" || fail "SVG not well-formed"
else
    head -c 200 "$svg" | grep -q '<svg ' && tail -n 1 "$svg" | grep -q '^</svg>$' &&
        echo "ok: SVG structure" || fail "SVG structure"
fi
n=$(grep -c 'class="l[0-9]*"><title>' "$svg")
[ "$n" -eq 9 ] && echo "ok: SVG has one rectangle per task" || fail "SVG: $n task rectangles, expected 9"
steals=$(sed -n '/<g id="steals">/,/<\/g>/p' "$svg")
[ "$(printf '%s\n' "$steals" | grep -c 'class="s1"')" -eq 1 ] && [ "$(printf '%s\n' "$steals" | grep -c 'class="s2"')" -eq 2 ] &&
    echo "ok: SVG steal marks (1 same node, 2 across nodes)" || fail "SVG steal marks"
grep -q 'stolen from T0</title>' "$svg" && grep -q '<g id="legend">' "$svg" && grep -q 'time (s)' "$svg" &&
    echo "ok: SVG tooltips, legend, axis" || fail "SVG tooltips/legend/axis"
svgw=$(sed -n 's/.*<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$svg")
sig=$(od -An -tx1 -N8 "$tmp/g.png" | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a" ] && echo "ok: PNG signature" || fail "PNG signature '$sig'"
ihdr=$(od -An -tx1 -j8 -N16 "$tmp/g.png" | tr -d ' \n')
[ "$(printf '%s' "$ihdr" | cut -c1-16)" = "0000000d49484452" ] && echo "ok: PNG IHDR first" || fail "PNG IHDR '$ihdr'"
pw=$(od -An -tu1 -j16 -N4 "$tmp/g.png" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
ph=$(od -An -tu1 -j20 -N4 "$tmp/g.png" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
[ "$pw $ph" = "$svgw" ] && [ "$pw" -eq 800 ] && echo "ok: PNG is ${pw}x$ph like the SVG" ||
    fail "PNG size '$pw $ph', SVG '$svgw'"
if [ "$have_py" = yes ]; then
    # every chunk's CRC, the pixel data's size, and the colour at the middle of each task rectangle
    # of the SVG (its level's colour), of the idle band (black) and of a steal strip
    python3 - "$tmp/g.png" "$svg" <<'EOF' && echo "ok: PNG chunks, CRCs and pixels" || fail "PNG content"
import re, struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
svg = open(sys.argv[2]).read()
pos, idat, types = 8, b'', []
while pos < len(d):
    (n,) = struct.unpack('>I', d[pos:pos + 4]); typ = d[pos + 4:pos + 8]; body = d[pos + 8:pos + 8 + n]
    assert struct.unpack('>I', d[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(typ + body) & 0xffffffff, typ
    types.append(typ); idat += body if typ == b'IDAT' else b''
    if typ == b'IHDR':
        w, h, depth, ctype, comp, filt, lace = struct.unpack('>IIBBBBB', body)
        assert (depth, ctype, comp, filt, lace) == (8, 2, 0, 0, 0)
    pos += 12 + n
assert types[0] == b'IHDR' and types[-1] == b'IEND' and b'IDAT' in types and pos == len(d)
raw = zlib.decompress(idat)
assert len(raw) == h * (3 * w + 1)
def px(x, y):
    o = int(y) * (3 * w + 1) + 1 + 3 * int(x)
    return '%02x%02x%02x' % tuple(raw[o:o + 3])
fills = dict(re.findall(r'\.(l\d+)\{fill:#([0-9a-f]{6})\}', svg))
rects = re.findall(r'<rect x="([\d.]+)" y="(\d+)" width="([\d.]+)" height="(\d+)" class="(l\d+)"><title>', svg)
assert len(rects) == 9
for x, y, wd, ht, cls in rects:
    x, y, wd, ht = float(x), int(y), float(wd), int(ht)
    got = px(x + wd / 2, y + ht - 2)
    assert got == fills[cls], (x, y, got, fills[cls])
# thread 3 is idle from 0.2 s to 0.6 s, the middle of its row at 0.4 s is black
band = re.findall(r'<rect x="(\d+)" y="(\d+)" width="([\d.]+)" height="(\d+)" fill="#000000"/>', svg)[3]
x0, y0, wd, ht = int(band[0]), int(band[1]), float(band[2]), int(band[3])
assert px(x0 + 0.4 * wd, y0 + ht / 2) == '000000'
m = re.search(r'<rect x="([\d.]+)" y="(\d+)" width="([\d.]+)" height="(\d+)" class="s2"/>', svg)
assert px(float(m.group(1)) + float(m.group(3)) / 2, int(m.group(2)) + 1) == 'e00000'
EOF
    python3 -m json.tool "$tmp/g.json" > /dev/null && echo "ok: Chrome JSON valid" || fail "Chrome JSON invalid"
    python3 - "$tmp/g.json" <<'EOF' && echo "ok: Chrome JSON events" || fail "Chrome JSON events"
import json, sys
j = json.load(open(sys.argv[1]))
ev = j['traceEvents']
x = [e for e in ev if e['ph'] == 'X']
names = [e for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name']
assert len(x) == 9 and len(names) == 4 and all(e['pid'] == 0 for e in ev)
t4 = [e for e in x if e['args']['task'] == 4][0]
assert t4['tid'] == 0 and t4['name'] == 'panel 4' and abs(t4['ts'] - 400000) < 1e-6 and abs(t4['dur'] - 200000) < 1e-6
assert t4['args']['level'] == 1 and t4['args']['cblk'] == 4 and t4['args']['victim'] == -1
t7 = [e for e in x if e['args']['task'] == 7][0]
assert t7['tid'] == 3 and t7['args']['victim'] == 1
EOF
else
    grep -q '"traceEvents":\[' "$tmp/g.json" && [ "$(grep -c '"ph":"X"' "$tmp/g.json")" -eq 9 ] &&
        echo "ok: Chrome JSON (python3 missing: structure only)" || fail "Chrome JSON structure"
fi
# charts default to phase 0 and say so when there are several
out=$("$bin" "$small" --svg "$tmp/d.svg" 2>&1 >/dev/null)
printf '%s\n' "$out" | grep -q "charts show phase 0" && grep -q "phase factorize" "$tmp/d.svg" &&
    echo "ok: default phase noted" || fail "default chart phase"

# a large trace stays a reasonable SVG: 8 threads x 12500 tasks of 1 microsecond, levels mixed
awk 'BEGIN {
    print "canopy-trace 1"; print "phase big threads 8 tasks 100000 scheduler dynamic wall 0.030000000 predicted 0"
    for (t = 0; t < 8; t++) print "thread " t " core " t " node " int(t / 4)
    for (t = 0; t < 8; t++) for (k = 0; k < 12500; k++) {
        s = k * 2e-6; v = (k % 10 == 0) ? (t + 1) % 8 : -1
        printf "task %d %.9f %.9f %d update %d %d %d 0.000001\n", t, s, s + 1e-6, t * 12500 + k, k, k % 3, v
    }
}' > "$tmp/big.txt"
t "100000 tasks" 0 "$bin" "$tmp/big.txt" --svg "$tmp/big.svg" --png "$tmp/big.png"
size=$(wc -c < "$tmp/big.svg")
[ "$size" -lt 2000000 ] && echo "ok: SVG of 100000 tasks is $size bytes" || fail "SVG of 100000 tasks is $size bytes"

# ---- malformed traces -------------------------------------------------------------------------------
H="canopy-trace 1"
P="phase f threads 2 tasks 2 scheduler dynamic wall 1 predicted 0"
TH="thread 0 core 0 node 0
thread 1 core 1 node 1"
bad "empty file" "empty file" ""
bad "not a trace" ":1: not a Canopy trace" "%%MatrixMarket matrix coordinate real general"
bad "future version" ":1: trace format version 2 is not supported" "canopy-trace 2"
bad "no phase" ":1: no phase" "$H"
bad "unknown record" ":2: expected a 'phase' line, found 'tasks'" "$H
tasks 3"
bad "phase field missing" ":2: phase line: 'predicted' missing" "$H
phase f threads 2 tasks 0 scheduler s wall 1"
bad "phase keyword wrong" ":2: phase line: expected 'tasks', found 'task'" "$H
phase f threads 2 task 0 scheduler s wall 1 predicted 0"
bad "zero threads" ":2: threads 0 is out of range" "$H
phase f threads 0 tasks 0 scheduler s wall 1 predicted 0"
bad "huge thread count" ":2: threads 99999999999 is out of range" "$H
phase f threads 99999999999 tasks 0 scheduler s wall 1 predicted 0"
bad "negative wall" ":2: wall -1 is out of range 0..1e+09 seconds" "$H
phase f threads 1 tasks 0 scheduler s wall -1 predicted 0"
bad "thread lines missing" ":3: end of file: phase 'f' (line 2) declares 2 threads, found 1" "$H
$P
thread 0 core 0 node 0"
bad "threads out of order" ":3: thread 1 where thread 0 was expected" "$H
$P
thread 1 core 0 node 0"
bad "task lines missing" ":4: end of file: phase 'f' (line 2) declares 2 tasks, found 0" "$H
$P
$TH"
bad "extra field" ":5: task line: unexpected '7' after the last field" "$H
$P
$TH
task 0 0.1 0.2 0 panel 0 0 -1 0 7"
bad "field missing" ":5: task line: 9 fields, expected 10" "$H
$P
$TH
task 0 0.1 0.2 0 panel 0 0 -1"
bad "bad number" ":5: start: '0.1x' is not a number" "$H
$P
$TH
task 0 0.1x 0.2 0 panel 0 0 -1 0"
bad "not finite" ":5: end nan is out of range" "$H
$P
$TH
task 0 0.1 nan 0 panel 0 0 -1 0"
bad "unknown kind" ":5: unknown task kind 'gemm'" "$H
$P
$TH
task 0 0.1 0.2 0 gemm 0 0 -1 0"
bad "thread out of range" ":5: thread 2 is out of range 0..1" "$H
$P
$TH
task 2 0.1 0.2 0 panel 0 0 -1 0"
bad "victim out of range" ":5: victim 5 is out of range -1..1" "$H
$P
$TH
task 0 0.1 0.2 0 panel 0 0 5 0"
bad "stolen from itself" ":5: thread 0 stole a task from itself" "$H
$P
$TH
task 0 0.1 0.2 0 panel 0 0 0 0"
bad "ends before it starts" ":5: task ends (0.100000000) before it starts (0.200000000)" "$H
$P
$TH
task 0 0.2 0.1 0 panel 0 0 -1 0"
bad "ends after wall" ":5: task ends at 1.500000000, after the phase's wall time 1.000000000" "$H
$P
$TH
task 0 0.2 1.5 0 panel 0 0 -1 0"
bad "unsorted threads" ":6: task lines not sorted by thread (0 after 1)" "$H
$P
$TH
task 1 0.1 0.2 0 panel 0 0 -1 0
task 0 0.1 0.2 1 panel 0 0 -1 0"
bad "overlapping tasks" ":6: task starts at 0.150000000, before the previous task of thread 0 ends (0.200000000)" "$H
$P
$TH
task 0 0.1 0.2 0 panel 0 0 -1 0
task 0 0.15 0.3 1 panel 0 0 -1 0"
bad "duplicate id" ":7: task id 4 already used on line 5" "$H
$P
$TH
task 0 0.1 0.2 4 panel 0 0 -1 0
# a comment between tasks
task 1 0.1 0.2 4 panel 0 0 -1 0"
bad "more tasks than declared" ":7: expected a 'phase' line, found 'task'" "$H
$P
$TH
task 0 0.1 0.2 0 panel 0 0 -1 0
task 1 0.1 0.2 1 panel 0 0 -1 0
task 1 0.3 0.4 2 panel 0 0 -1 0"
bad "long name" ":2: phase name 'aaaaaaaaaaaaaaaaaaaa...' is longer than 63" "$H
phase aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa threads 1 tasks 0 scheduler s wall 1 predicted 0"

# ---- fuzz: whatever the bytes, exit 0 or 1 and never a signal ------------------------------------------
crash=0
run_fuzz() { # file
    "$bin" "$1" --svg "$tmp/f.svg" --png "$tmp/f.png" --chrome "$tmp/f.json" --width 640 > /dev/null 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        crash=$((crash + 1)); cp "$1" "$tmp/../canopy-trace-crash.$$.$crash.txt" 2>/dev/null
        echo "FAIL: exit $rc on a mangled trace (kept as canopy-trace-crash.$$.$crash.txt)"
    fi
}
lines=$(wc -l < "$small")
k=0
while [ "$k" -le "$lines" ]; do # every truncation at a line
    head -n "$k" "$small" > "$tmp/fz.txt"; run_fuzz "$tmp/fz.txt"; k=$((k + 1))
done
for k in 1 2 3 4 5 6 7 8; do # random bytes, and random bytes after a valid header and phase line
    head -c 3000 /dev/urandom > "$tmp/fz.txt"; run_fuzz "$tmp/fz.txt"
    { head -n 9 "$small"; head -c 500 /dev/urandom; } > "$tmp/fz.txt"; run_fuzz "$tmp/fz.txt"
done
if [ "$have_py" = yes ]; then # 300 mutations: flipped, deleted, inserted and swapped bytes and tokens
    python3 - "$small" "$tmp/mut" <<'EOF'
import os, random, sys
src = open(sys.argv[1], 'rb').read()
os.makedirs(sys.argv[2], exist_ok=True)
rnd = random.Random(20240601)
toks = [b'-1', b'0', b'1e308', b'-0', b'nan', b'inf', b'2147483648', b'99999999999999999999', b'', b' ', b'\n',
        b'\0', b'task', b'phase', b'thread', b'#', b'\xff\xfe', b'0x10', b'1e-320', b'panel', b'canopy-trace 1\n']
for i in range(300):
    d = bytearray(src)
    for _ in range(rnd.randint(1, 4)):
        p = rnd.randrange(len(d))
        op = rnd.randrange(4)
        if op == 0: d[p] = rnd.randrange(256)
        elif op == 1: del d[p:p + rnd.randint(1, 20)]
        elif op == 2: d[p:p] = rnd.choice(toks)
        else:
            words = bytes(d).split(b' ')
            j = rnd.randrange(len(words)); words[j] = rnd.choice(toks); d = bytearray(b' '.join(words))
    open(os.path.join(sys.argv[2], '%03d.txt' % i), 'wb').write(bytes(d))
EOF
    for f in "$tmp"/mut/*.txt; do run_fuzz "$f"; done
fi
[ "$crash" -eq 0 ] && echo "ok: fuzzed traces never crash" || fails=$((fails + crash))

echo "$fails failed"
[ "$fails" -eq 0 ]
