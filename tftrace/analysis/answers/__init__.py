"""Answers to the questions an agent or a script asks of an analysed run: its findings, what one
finding rests on, and the step after several fixes; pure functions of the report."""
