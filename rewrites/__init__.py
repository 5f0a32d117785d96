"""lift.rewrites"""
