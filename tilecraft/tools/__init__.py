"""Developer tools: the `tilecraft` command line (`python -m tilecraft`), and TileLang's `tools.Analyzer`."""

from tilecraft.tools.analyzer import AnalysisResult, Analyzer

__all__ = ["AnalysisResult", "Analyzer"]
