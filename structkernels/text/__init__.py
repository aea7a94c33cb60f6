"""Text utilities for sentence re-writings: tokenising and stemming."""

from structkernels.text.tokenize import TextPipeline, stem, tokenize

__all__ = ["TextPipeline", "stem", "tokenize"]
