"""AMD instructions the HIP backend emits, and the register layouts they impose."""
