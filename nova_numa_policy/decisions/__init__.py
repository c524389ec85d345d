"""Pure decisions on a snapshot and the one executor that carries them out.
"""
