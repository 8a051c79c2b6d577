"""``python -m dpsk``: plain-text help, and a baseline that says which alpha it used."""

import pytest

from dpsk.__main__ import ledger_note, main


def test_help_is_plain_text(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":class:" not in text and ":func:" not in text
    assert "Test error against epsilon" in text


@pytest.mark.slow
def test_demo_labels_every_baseline_with_its_alpha_and_c(capsys):
    assert main(["--repeats", "1"]) == 0
    out = capsys.readouterr().out
    # Each non-private line names its alpha and C; the private rows their alpha.
    assert "logistic  alpha 10^-2.5  (C 0.00874) the alpha of logistic, objective" in out
    assert "huber     alpha 10^-2.5  (C 0.00874) the alpha of huber SVM, objective" in out
    assert "best alpha on a validation split" in out
    assert "logistic, objective     10^-2.5" in out
    assert "15 private fits spent epsilon = 4.98" in out
    assert ledger_note(3, 5, 1) in out


def test_the_ledger_total_is_explained():
    # A newcomer read "45 private fits spent epsilon = 14.94" as the model's epsilon.
    note = " ".join(ledger_note(3, 5, 3).split())
    assert "all 45 fits" in note and "3 models x 5 epsilons x 3 repeats" in note
    assert "each model in the table spent only the epsilon of its column" in note
