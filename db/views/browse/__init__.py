"""The views that browse the store: runs, sweeps, noise, trends, the matrix, memory, correctness and the claims."""
