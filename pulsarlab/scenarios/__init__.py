"""Scenario drivers that run parts of the model alone: a Key_Shared selector under consumer churn, key
distribution over many keys, a delayed-delivery workload on one tracker.

Models no Pulsar class; each driver names the Pulsar classes it exercises.
"""
