"""Expected failures of scikit-learn's estimator checks shared by several test files."""

#: scikit-learn's sample-weight checks that a private fit fails on purpose
#: (docs/privacy.rst, "Weights"). They apply to estimators whose fit takes
#: ``sample_weight``; the others refuse it and pass the checks for that.
WEIGHT_XFAILS = {
    "check_sample_weights_list":
        "weights of 3: dpsk's weights lie in [0, 1] (the privacy proof's domain); "
        "larger ones are refused for free",
    "check_sample_weights_not_overwritten":
        "uses a weight of 10, outside [0, 1]: refused for free",
    "check_all_zero_sample_weights_error":
        "all-zero weights are inside dpsk's domain: the fit releases the noise-only "
        "model and is charged, instead of raising",
    "check_sample_weight_equivalence_on_dense_data":
        "integer weights equal repeated rows only if weights may exceed 1 and the "
        "objective divides by sum(w); dpsk divides by the public n, and its noise is random",
    "check_sample_weight_equivalence_on_sparse_data":
        "as on dense data: dpsk divides by the public n, not by sum(w), and adds noise",
    # Not a sample weight, but every estimator that takes class_weight also takes
    # sample_weight, so the one set serves both (scikit-learn runs this check only
    # when class_weight is a parameter: not for naive Bayes).
    "check_class_weight_classifiers":
        "sets class_weight without declared classes, which dpsk refuses for free: "
        "whether a key is among y's labels would be a noise-free fact about the data",
}


def parametrize_with_checks(estimators, **kwargs):
    """scikit-learn's ``parametrize_with_checks``, with its cases as a list.

    scikit-learn 1.8 hands pytest a generator, which pytest 9.2 deprecates
    (``PytestRemovedIn10Warning``); 1.9 already passes a list. The cases,
    their ids and marks are the same.
    """
    import pytest
    from sklearn.utils.estimator_checks import parametrize_with_checks as sklearn_checks

    mark = sklearn_checks(estimators, **kwargs)
    names, cases = mark.args
    return pytest.mark.parametrize(names, list(cases), **mark.kwargs)
