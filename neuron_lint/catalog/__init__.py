"""The rule catalog: TOML schema and loading, the match index, the prefilter, the matcher registry."""
