"""Parse, walk and analyse one file; run many (processes, cache); the facts around a file."""
