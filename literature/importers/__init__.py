"""Readers of the reference formats researchers export: each turns a binary stream into parsed records."""
