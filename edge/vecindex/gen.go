package vecindex

//go:generate sh -c "cd _asm && go run . -out ../dot_amd64.s -stubs ../dot_amd64_stub.go -pkg vecindex"
