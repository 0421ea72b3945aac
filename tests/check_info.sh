#!/usr/bin/env bash
# check_info.sh OFFCOLL_INFO VERSION README
#
# offcoll_info reports what README promises: the version, the backend in use
# and why verbs is not (or which verbs device and trigger), the progress
# engine, every configuration variable of README's table but the verbs-only
# ones (the backend line reports those where verbs runs) with the value in
# force, and the path between two contexts on this host. A value set in the
# environment shows; a bad one fails with exit 1, naming the variable; one
# that is not offcoll's draws a warning.
set -u
info=$1 version=$2 readme=$3
# glibc's advice to large mallocs sets OC_HUGE_BUFFERS' default: the runs
# below set it where they mean it.
unset GLIBC_TUNABLES
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
# expect LABEL NEEDLE: the last run's output has a line starting with NEEDLE
expect() {
    grep -q -- "^$2" <<< "$out" || fail "$1: no line \"$2\" in:"$'\n'"$out"
}

out=$(unset ${!OC_*}; "$info" 2>&1) || fail "default run: exit status $?"
expect default "offcoll $version\$"
expect default "Backend in use: \(ucx\|verbs\)"
grep -q "^Backend in use: .*verbs" <<< "$out" || fail "the backend line says nothing of verbs"
expect default "Progress engine: thread"
expect default "Intranode path"
# OC_INTRANODE=auto: cma where the host's transparent huge pages are
# "always", or "madvise" with OC_HUGE_BUFFERS=1, else shm (the shared-memory
# FIFO for a rendezvous: no cma lane); OC_INTRANODE=cma and
# UCX_CMA_MEMORY_INVALIDATE=y give cma where the host has it (the kernel may
# refuse process_vm_readv between ranks).
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
auto=shm advised=shm
case $thp in
always) auto=cma advised=cma ;;
madvise) advised=cma ;;
esac
expect default "rank 0 -> rank 1: .* (OC_INTRANODE=$auto, by auto)"
default_out=$out
for set in OC_HUGE_BUFFERS=1 GLIBC_TUNABLES=glibc.malloc.hugetlb=1; do
    out=$(unset ${!OC_*}; env "$set" "$info" 2>&1) || fail "$set: exit status $?"
    expect "$set" "rank 0 -> rank 1: .* (OC_INTRANODE=$advised, by auto)"
    expect "$set" "OC_HUGE_BUFFERS *= 1"
done
out=$default_out
if grep -q "^Backend in use: ucx" <<< "$out"; then
    path=$(unset ${!OC_*} UCX_CMA_MEMORY_INVALIDATE UCX_MEMORY_INVALIDATE; "$info" 2>&1 |
           grep "^rank 0 -> rank 1: ")
    case $auto,$path in shm,*cma/*) fail "cma in the default intranode path: $path" ;; esac
    for set in OC_INTRANODE=cma UCX_CMA_MEMORY_INVALIDATE=y; do
        case $(unset ${!OC_*}; env "$set" "$info" 2>&1 | grep "^rank 0 -> rank 1: ") in
        *cma/*) ;;
        *) echo "note: no cma lane with $set on this host (cma unavailable)" ;;
        esac
    done
fi
# Shared-memory fragments of 32 KB (offload/ucx/README.md), where UCX says
# where its eager copies end; a size the user sets stays hers.
bcopy_end() {
    grep -o 'tag_send: .*<egr/bcopy>\.\.[0-9]*' | head -1 | sed 's/.*\.\.//'
}
if grep -q "^Backend in use: ucx" <<< "$out" && grep -q "tag_send: .*<egr/bcopy>" <<< "$out"; then
    end=$(bcopy_end <<< "$out")
    [ "$end" = 32768 ] || fail "eager copies end at ${end:-?} bytes, not 32768: fragments not 32 KB"
    for var in UCX_MM_SEG_SIZE UCX_SYSV_SEG_SIZE; do
        end=$(unset ${!OC_*}; env "$var=16k" "$info" 2>&1 | bcopy_end)
        [ "$end" = 16384 ] || fail "$var=16k: eager copies end at ${end:-?} bytes, not 16384"
    done
fi
keys=$(grep -o '^| `OC_[A-Z_]*` |[^|]*| [^|]*' "$readme" | grep -v '| verbs only' |
       sed 's/^| `\(OC_[A-Z_]*\)`.*/\1/')
[ "$(wc -w <<< "$keys")" -ge 10 ] || fail "found only these variables in $readme: $keys"
for k in $keys; do
    expect default "$k *= "
done

out=$(unset ${!OC_*}; OC_PROGRESS=inline OC_RINGK=3 OC_INTRANODE=loopback "$info" 2>&1) ||
    fail "OC_PROGRESS=inline: exit status $?"
expect set "OC_PROGRESS *= inline\$"
expect set "OC_RINGK *= 3\$"
expect set "Progress engine: inline"
expect set "rank 0 -> rank 1: .* (OC_INTRANODE=loopback)"

out=$(unset ${!OC_*}; OC_RINGK=zero "$info" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "OC_RINGK=zero: exit status $rc, not 1"
grep -q "offcoll_info: OC_RINGK=zero: expected" <<< "$out" || fail "OC_RINGK=zero not named: $out"

# Every variable of README's table, set to its default there, is one oc_init
# knows (no warning: its list of names keeps up with the table); a misspelt
# one is named, with the one meant.
assign=$(grep -o '^| `OC_[A-Z_]*` | `[^`]*`' "$readme" |
         sed 's/^| `\(OC_[A-Z_]*\)` | `\([^`]*\)`/\1=\2/')
[ "$(wc -w <<< "$assign")" -ge 15 ] || fail "found only these defaults in $readme: $assign"
out=$(unset ${!OC_*}; env $assign "$info" 2>&1) || fail "README's defaults: exit status $?"
! grep -q "offcoll does not read" <<< "$out" ||
    fail "a variable of README's table is one oc_init does not know: $out"
out=$(unset ${!OC_*}; OC_RINGKK=2 "$info" 2>&1)
grep -q "offcoll does not read, ignored: OC_RINGKK (did you mean OC_RINGK?)" <<< "$out" ||
    fail "OC_RINGKK not named: $out"

# Where verbs has no device, asking for it fails and says why.
if grep -q "^Backend in use: ucx.*verbs: no RDMA device" <<< "$(unset ${!OC_*}; "$info" 2>&1)"; then
    out=$(unset ${!OC_*}; OC_BACKEND=verbs "$info" 2>&1)
    rc=$?
    [ "$rc" -eq 1 ] || fail "OC_BACKEND=verbs without a device: exit status $rc, not 1"
    grep -q "OC_BACKEND=verbs: verbs backend unavailable: no RDMA device" <<< "$out" ||
        fail "OC_BACKEND=verbs without a device: $out"
fi

# It takes no options: one given is refused, --help is a usage text.
out=$("$info" --verbose 2>&1)
rc=$?
[ "$rc" -eq 2 ] && grep -q "offcoll_info: takes no options" <<< "$out" ||
    fail "offcoll_info --verbose: exit status $rc: $out"
"$info" --help | grep -q "^usage: offcoll_info" || fail "offcoll_info --help: no usage"

[ "$fails" -eq 0 ] || exit 1
echo "offcoll_info: version, backend, engine, $(wc -w <<< "$keys") variables and the path reported"
