"""lift.rules"""
