"""Files in and out: model files (:mod:`~onlinekernel.io.modelfile`), the
streaming readers of the command line (:mod:`~onlinekernel.io.readers`:
CSV, npz, svmlight) and the atomic writer they share
(:mod:`~onlinekernel.io.files`)."""
