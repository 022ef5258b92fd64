"""What a run is made from, loaded and validated: scenarios, companion prompt versions,
personas (the simulated users), and token prices; with their contracts (inputs/contracts.py).

Every loader names the file and the field of each mistake, and reports them all in one pass.
"""
