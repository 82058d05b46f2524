"""Inkling FA4 relative attention (CuTe DSL): migration spec (the contract implementation is issue #4)."""
