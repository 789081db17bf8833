"""The closed pool's simulation wing: campaigns on a pool every run scores whole
(:mod:`.campaigns`), and the command's options and table for it (:mod:`.command`).
"""
