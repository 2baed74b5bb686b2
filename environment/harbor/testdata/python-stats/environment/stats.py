"""Descriptive statistics of a list of numbers."""


def mean(xs):
    raise NotImplementedError


def median(xs):
    raise NotImplementedError


def mode(xs):
    raise NotImplementedError
