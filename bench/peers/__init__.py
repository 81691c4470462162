"""Stronger peers for bench/run (issue 13.1): the same endpoints written the fast way in other stacks."""
