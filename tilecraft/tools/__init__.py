"""Developer tools: the `tilecraft` command line (`python -m tilecraft`)."""
