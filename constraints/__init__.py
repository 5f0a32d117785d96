"""lift.constraints"""
