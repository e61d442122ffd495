"""The runtime: the executor thread that runs compiled programs in order, the collectives
between devices (threads in one process, MPI across processes), Arrays held by PJRT
devices, and the profiler (`profiler/`: trace collection, the device memory profile)."""
