"""The open world's simulation wing: campaigns on a labelled data set whose runs are sets of
predicted items (:mod:`.campaigns`), and the command's options and table for it (:mod:`.command`).
"""
