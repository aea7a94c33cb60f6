"""String re-writing kernels (Bu et al., 2012) and the PR features kernel.

- :mod:`~structkernels.kernels.srk.common`: re-writings, encoding, the shared machinery;
- :mod:`~structkernels.kernels.srk.kb`: kb-SRK; :mod:`~structkernels.kernels.srk.ps`:
  ps-SRK; :mod:`~structkernels.kernels.srk.pw`: pw-SRK;
- :mod:`~structkernels.kernels.srk.pr`: the PR kernel of paraphrase features.
"""
