module example.org/minigpt

go 1.26
