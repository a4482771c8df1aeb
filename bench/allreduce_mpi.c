/* The peer of bench row 7 (bench/distributed.ts): MPI_Allreduce (sum, in place) of a float32
 * buffer called directly from C, timed like tspto's allReduce in bench/allreduce_child.ts.
 * Built by the bench with mpicc. argv: bytes, iterations. Rank 0 prints one JSON line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 10;
  long n = bytes / 4;
  float* buf = malloc(bytes);
  for (long i = 0; i < n; i++) buf[i] = (float)((i * 2654435761u + rank) % 1000) / 1000.0f;
  double* ms = malloc(sizeof(double) * iters);
  for (int w = 0; w < 2; w++) MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < iters; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    ms[i] = (MPI_Wtime() - t0) * 1e3;
  }
  qsort(ms, iters, sizeof(double), cmp);
  if (rank == 0) printf("{\"ranks\": %d, \"bytes\": %ld, \"medianMs\": %.3f, \"minMs\": %.3f}\n", size, bytes, ms[iters / 2], ms[0]);
  free(ms);
  free(buf);
  MPI_Finalize();
  return 0;
}
