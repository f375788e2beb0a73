"""The `cc` execution backend: C sources -> the system C compiler -> a shared library -> ctypes."""
