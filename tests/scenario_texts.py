"""Scenario file texts the tests build on: the smallest leaf-spine and a permutation of
UDP flows over it for a millisecond, in sections a test can replace or add to."""

HEAD = """name = "fz"
seed = 1
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 2
"""
UDP = '[[traffic]]\nkind = "udp"\npattern = "permutation"\nrate = "1Gbps"\nsize = "10KB"\n'
RUN = '[run]\nduration = "1ms"\n'
SMALL_UDP = HEAD + UDP + RUN
"""A whole scenario: four hosts each sending 10 KB at 1 Gb/s to another, for 1 ms."""
