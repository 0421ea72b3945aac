#!/usr/bin/env python3
"""Prints this folder's tables (medians over the runs) from its CSVs.
Run from this folder: python3 tables.py"""
import csv, glob, statistics as st


def rows(path):
    return csv.DictReader(l for l in open(path) if not l.startswith('#'))


def alltoall_runs(patterns):
    runs = []
    for pat in patterns:
        for f in sorted(glob.glob(pat)):
            runs.append({(r['impl'], int(r['block_bytes'])): r for r in rows(f)})
    return runs


def size_label(b):
    return '%d KB' % (b // 1024) if b < 1 << 20 else '%d MB' % (b >> 20)


def ratio(r, impl, b, col='pure_us'):
    return float(r[(impl, b)][col]) / float(r[('mpi_blocking', b)][col])


def alltoall(np):
    fifo = alltoall_runs([f'alltoall/old_np{np}_noinv_r*.csv', f'alltoall/new_np{np}_fifo_r*.csv'])
    cma = alltoall_runs([f'alltoall/old_np{np}_def_r*.csv', f'alltoall/new_np{np}_cma_r*.csv'])
    print(f'\n{np} ranks, pure time ({len(fifo)} runs each):\n')
    print('| block | MPI_Alltoall, µs | oc_thread cma, µs | oc_thread FIFO, µs | cma / MPI | FIFO / MPI | FIFO / cma | oc_inline FIFO / MPI |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for b in sorted({k[1] for k in fifo[0]}):
        med = lambda runs, impl: st.median(float(r[(impl, b)]['pure_us']) for r in runs)
        rf = [ratio(r, 'oc_thread', b) for r in fifo]
        tc, tf = med(cma, 'oc_thread'), med(fifo, 'oc_thread')
        print('| %s | %.1f | %.1f | %.1f | %.2f | %.2f (%.2f-%.2f) | %.2f | %.2f |' % (
            size_label(b), med(fifo + cma, 'mpi_blocking'), tc, tf,
            st.median(ratio(r, 'oc_thread', b) for r in cma), st.median(rf), min(rf), max(rf),
            tf / tc, st.median(ratio(r, 'oc_inline', b) for r in fifo)))


def against(title, patterns):
    runs = alltoall_runs(patterns)
    print(f'\n{title} ({len(runs)} runs), medians over MPI_Alltoall\'s pure time:\n')
    print('| block | oc_inline | oc_thread |')
    print('| ---: | ---: | ---: |')
    for b in sorted(set.intersection(*({k[1] for k in r} for r in runs))):
        print('| %s | %.2f | %.2f |' % (size_label(b), st.median(ratio(r, 'oc_inline', b) for r in runs),
                                       st.median(ratio(r, 'oc_thread', b) for r in runs)))


def p3dfft():
    print('\nP3DFFT, nv = 4, ms per variable (medians):\n')
    print('| grid, N | blocking | mpi_nb | offload, cma | offload, FIFO | FFTW-MPI | FIFO / cma | visible comm, cma -> FIFO, ms |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
    for np, grid in ((2, '1x2'), (4, '2x2')):
        load = lambda v: [{(r['impl'], int(r['n'])): r for r in rows(f) if r['nv'] == '4'}
                          for f in sorted(glob.glob(f'p3dfft/np{np}_{v}_r*.csv'))]
        fifo, cma = load('fifo'), load('cma')
        for n in (128, 256):
            med = lambda runs, impl, col='time_ms': st.median(float(r[(impl, n)][col]) for r in runs)
            print('| %s, %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f -> %.2f |' % (
                grid, n, med(fifo + cma, 'blocking'), med(fifo + cma, 'mpi_nb'), med(cma, 'offload'),
                med(fifo, 'offload'), med(fifo + cma, 'fftw_mpi'), med(fifo, 'offload') / med(cma, 'offload'),
                med(cma, 'offload', 'comm_ms'), med(fifo, 'offload', 'comm_ms')))


def put():
    for np in (2, 4):
        runs = alltoall_runs([f'put/np{np}_r*.csv'])
        print(f'\nput (oc_persist) against burst (oc_thread), {np} ranks ({len(runs)} runs), pure time:\n')
        print('| block | MPI_Alltoall, µs | burst, µs | put, µs | put / MPI | put / burst |')
        print('| ---: | ---: | ---: | ---: | ---: | ---: |')
        for b in sorted({k[1] for k in runs[0]}):
            med = lambda impl: st.median(float(r[(impl, b)]['pure_us']) for r in runs)
            print('| %s | %.1f | %.1f | %.1f | %.2f | %.2f |' % (size_label(b), med('mpi_blocking'), med('oc_thread'),
                                                               med('oc_persist'), med('oc_persist') / med('mpi_blocking'),
                                                               med('oc_persist') / med('oc_thread')))


alltoall(2)
alltoall(4)
against('4 ranks, 1-8 KB, FIFO, all runs', ['alltoall/old_np4_noinv_r*.csv', 'alltoall/new_np4_fifo_r*.csv',
                                             'alltoall/new_small_np4_r*.csv'])
for np in (2, 4):
    against(f'{np} ranks against MPI without cma (btl_vader_single_copy_mechanism=none)', [f'mpi_none/np{np}_r*.csv'])
p3dfft()
put()
