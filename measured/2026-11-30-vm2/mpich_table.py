#!/usr/bin/env python3
"""Prints the medians of mpich_overlap.sh as Markdown tables:
   measured/2026-11-30-vm2/mpich_table.py OUTDIR NP
pure-communication time (us) of each implementation per block size, offcoll's
over MPICH's, then each implementation's overlap %."""
import csv
import sys

out, np = sys.argv[1], sys.argv[2]


def load(variant):
    rows = {}
    with open(f"{out}/{variant}_np{np}_median.csv") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            rows[(r["impl"], int(r["block_bytes"]))] = r
    return rows


ompi, mpich, asyn = load("ompi"), load("mpich"), load("mpich_async")


def val(rows, impl, size, col):
    return float(rows[(impl, size)][col])


def name(size):
    return f"{size // 1048576} MB" if size >= 1048576 else f"{size // 1024} KB"


sizes = sorted({s for (_, s) in mpich})
print("| block | MPICH `MPI_Alltoall` | MPICH `MPI_Ialltoall` | the same, MPICH's progress thread "
      "| offcoll thread | offcoll / MPICH `MPI_Alltoall` | offcoll / MPICH with its thread "
      "| Open MPI `MPI_Alltoall` | offcoll thread, Open MPI build |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for s in sizes:
    mb, mn = val(mpich, "mpi_blocking", s, "pure_us"), val(mpich, "mpi_nb", s, "pure_us")
    an, oc = val(asyn, "mpi_nb", s, "pure_us"), val(mpich, "oc_thread", s, "pure_us")
    print(f"| {name(s)} | {mb:g} | {mn:g} | {an:g} | {oc:g} | {oc / mb:.2f} | {oc / an:.2f} "
          f"| {val(ompi, 'mpi_blocking', s, 'pure_us'):g} | {val(ompi, 'oc_thread', s, 'pure_us'):g} |")
print()
print("| block | overlap %: MPICH `MPI_Ialltoall` | with its thread | offcoll thread "
      "| Open MPI `MPI_Ialltoall` | offcoll thread, Open MPI build |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for s in sizes:
    print(f"| {name(s)} | {val(mpich, 'mpi_nb', s, 'overlap_pct'):g} "
          f"| {val(asyn, 'mpi_nb', s, 'overlap_pct'):g} | {val(mpich, 'oc_thread', s, 'overlap_pct'):g} "
          f"| {val(ompi, 'mpi_nb', s, 'overlap_pct'):g} | {val(ompi, 'oc_thread', s, 'overlap_pct'):g} |")
