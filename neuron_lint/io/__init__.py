"""Files in and out: discovery, reading and decoding, positions, notebooks, source excerpts."""
