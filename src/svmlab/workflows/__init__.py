"""Declarative paper reproductions: one YAML file per workflow (sweep -> analysis -> report ->
claims), shipped inside the package. ``spec`` loads and checks them, ``claims`` judges a paper's
claims on the runs a workflow produced."""
