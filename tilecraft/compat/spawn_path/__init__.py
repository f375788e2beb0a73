"""A directory for sys.path that holds a stand-in `tilelang` package (see tilecraft.compat.runner).

The runner puts this directory first on sys.path. Processes that multiprocessing starts with the spawn
or forkserver method receive the parent's sys.path and re-import the script's `__main__`, whose
`import tilelang` then finds the stand-in, which installs the import hook in that process too.
"""
