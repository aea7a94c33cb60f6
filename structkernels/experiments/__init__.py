"""Experiment runners on top of the library: the train-npk main job, baselines tables, plots,
the relation evaluation and the SRK paraphrase run."""
