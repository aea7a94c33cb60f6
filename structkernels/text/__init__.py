"""Text utilities for sentence re-writings: tokenising, stemming, PR features, corpus loaders."""

from structkernels.text.tokenize import TextPipeline, stem, tokenize

__all__ = ["TextPipeline", "stem", "tokenize"]
