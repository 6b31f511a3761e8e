"""onlinekernel inside other frameworks: River online models
(:mod:`~onlinekernel.integrations.river`) and Dask collections
(:mod:`~onlinekernel.integrations.dask`).  Each needs its optional extra
(``pip install "onlinekernel[dask]"``, River for the adapters) only when used."""
