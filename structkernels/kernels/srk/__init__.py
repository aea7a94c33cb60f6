"""String re-writing kernels (Bu et al., 2012): kb-SRK, ps-SRK, pw-SRK, and the PR kernel."""
