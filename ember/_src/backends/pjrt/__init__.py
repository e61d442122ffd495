"""The PJRT backend: ember's StableHLO text handed to an XLA PJRT client (jaxlib's CPU
client, the TPU plug-in of libtpu, any PJRT plug-in named in PJRT_NAMES_AND_LIBRARY_PATHS).

`client` finds and creates the clients (jaxlib is imported on first use: `import ember`
never loads it), `executable` compiles module text and moves buffers. Nothing here traces
or lowers: the driver (ember/_src/driver/pjrt_dispatch.py) hands in finished StableHLO text.
"""
