"""Common given names, for spotting a person's name that no cue word ("my name is") introduces.

Names that are also everyday English words (Will, May, Mark, Bill, Grant, Rose, Hope...) are
left out: they are caught only after a cue or before a surname-like capitalized word.
"""

from __future__ import annotations

__all__ = ["GIVEN_NAMES", "NOT_A_NAME"]

GIVEN_NAMES = frozenset(
    """
    Aaron Abdul Abigail Adam Adrian Agnes Ahmed Aisha Alan Albert Alejandro Alex Alexander
    Alexandra Alexis Alfred Ali Alice Alicia Alison Amanda Amelia Amina Amir Amit Amy Ana
    Andrea Andrew Angela Anita Ann Anna Anne Anthony Antoine Antonio Anya Arjun Arthur Ashley
    Astrid Barbara Beatriz Ben Benjamin Bernard Beth Bethany Bob Boris Brandon Brenda Brian
    Bruno Camille Carl Carla Carlos Carmen Carol Caroline Catherine Charles Charlotte Chen
    Chloe Chris Christian Christina Christine Christopher Claire Claudia Connor Craig Cynthia
    Daniel Daniela Danielle Dana David Deborah Deepak Denise Dennis Diana Diego Dmitri
    Dominic Donald Donna Dorothy Douglas Dylan Edward Elena Eli Elias Elijah Elizabeth Ella
    Ellen Emily Emil Emile Émile Emma Eric Erik Erin Ethan Eva Evelyn Fatima Felix Fernando
    Fiona Florian Francesca Francis Francisco Frank Freya Gabriel Gabriela George Georgia
    Gerald Giovanni Giulia Gloria Greta Gregory Hannah Hans Harold Harry Hassan Heather Helen
    Helena Henry Hiroshi Hugo Ian Ingrid Irene Isaac Isabel Isabella Ivan Jack Jacob James
    Jamie Jan Jane Janet Jason Javier Jean Jennifer Jeremy Jessica Jiang Joan Joanna Joe
    Johann John Jonathan Jorge Jose José Joseph Joshua Juan Judith Julia Julian Julie Justin
    Karen Karim Kate Katherine Kathleen Katie Keith Kelly Kenji Kenneth Kevin Kim Kimberly
    Klaus Kyle Lars Laura Lauren Leah Lena Leo Leon Li Liam Lily Linda Lisa Lorenzo Louis
    Louise Lucas Lucia Luis Luke Lukas Madison Magnus Maria María Marie Marina Mario Marta
    Martha Martin Mary Mateo Matteo Matthew Maya Megan Mehmet Melissa Mia Michael Michelle
    Miguel Mikhail Ming Mohammed Mohammad Muhammad Nadia Nancy Naomi Natalia Natalie Nathan
    Nicholas Nicole Niklas Nina Noah Nora Olga Oliver Olivia Omar Oscar Pablo Pamela Patricia
    Patrick Paul Paula Pedro Peter Philip Pierre Rachel Rahul Rajesh Ralph Raphael
    Rebecca Richard Robert Roberto Rohan Ruth Ryan Sabine Samantha Samuel Sandra Sara Sarah
    Scott Sean Sebastian Sergei Sergio Sharon Shirley Simon Sofia Sophia Sophie Stefan
    Stephanie Stephen Steven Susan Svetlana Takeshi Tanya Teresa Thomas Timothy Tobias Tom
    Tomás Tyler Valentina Vanessa Victor Victoria Vincent Virginia Walter Wei Wolfgang Xavier
    Yasmin Yuki Yusuf Zachary Zara Zoe
    """.split()
)

#: Capitalized words that follow "Hi", "Thanks", "this is" without being a name.
NOT_A_NAME = frozenset(
    """
    A An The This That These Those It Its I We You He She They Our Your My His Her Their
    Please Thanks Thank Hi Hello Hey Dear Team Support Everyone All Folks There Again Here
    Customer Customers Agent Admin Sir Madam Guys Urgent Important Regarding Re Fwd About
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April
    June July August September October November December Today Tomorrow Yesterday
    Order Account Ticket Invoice Case Refund Billing Sales Service Services Help Desk And Or
    But So Not No Yes Ok Okay Sure Great Good Fine Just Also Still Only Is Was Are
    """.split()
)
