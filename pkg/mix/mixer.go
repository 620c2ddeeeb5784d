package mix

// Mixer runs the answerers concurrently and fuses their answers.
type Mixer struct{}
