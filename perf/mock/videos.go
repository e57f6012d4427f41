package mock

import (
	"bufio"
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Videos: POST .../videos creates a task (JSON body: model, prompt,
// seconds, size); GET .../videos/{id} polls it: queued, then in_progress,
// then completed on the VideoPollsToComplete-th poll; GET
// .../videos/{id}/content streams its bytes (video/mp4; VideoContent) once
// completed; GET .../videos lists the tasks (newest first; after, limit);
// DELETE .../videos/{id} deletes one.

// VideoPollsToComplete is the poll that first answers `completed`.
const VideoPollsToComplete = 3

var (
	openAIVideosCreateRoute = route{
		method: fasthttp.MethodPost, match: func(p []byte) bool { return bytes.HasSuffix(p, strVideosPath) },
		serve: (*Server).serveVideoCreate, appendError: appendOpenAIError,
	}
	openAIVideosGetRoute = route{
		method: fasthttp.MethodGet, match: isVideosPath,
		serve: (*Server).serveVideoGet, appendError: appendOpenAIError,
	}
	openAIVideosDeleteRoute = route{
		method: fasthttp.MethodDelete, match: isVideosPath,
		serve: (*Server).serveVideoDelete, appendError: appendOpenAIError,
	}
)

var (
	strVideosPath = []byte("/videos")
	videoKeys     = []string{"model", "prompt", "seconds", "size"}
)

func isVideosPath(p []byte) bool {
	return bytes.HasSuffix(p, strVideosPath) || bytes.Contains(p, []byte("/videos/"))
}

// VideoContent is the content of every mock video of the given knobs.
func VideoContent(chunks, chunkSize int) []byte { return SpeechAudio(chunks, chunkSize) }

type mockVideo struct {
	id, model, seconds, size string
	created                  int64
	polls                    int
}

// videoStore holds the mock's tasks.
type videoStore struct {
	mu    sync.Mutex
	tasks map[string]*mockVideo
	order []string
}

func (s *Server) video(id string) *mockVideo {
	s.videos.mu.Lock()
	defer s.videos.mu.Unlock()
	return s.videos.tasks[id]
}

func (v *mockVideo) status() (string, int) {
	switch {
	case v.polls >= VideoPollsToComplete:
		return "completed", 100
	case v.polls == 0:
		return "queued", 0
	}
	return "in_progress", 100 * v.polls / VideoPollsToComplete
}

func (v *mockVideo) append(dst []byte) []byte {
	st, progress := v.status()
	dst = append(dst, `{"id":"`...)
	dst = append(dst, v.id...)
	dst = append(dst, `","object":"video","model":"`...)
	dst = append(dst, v.model...)
	dst = append(dst, `","status":"`...)
	dst = append(dst, st...)
	dst = append(dst, `","progress":`...)
	dst = strconv.AppendInt(dst, int64(progress), 10)
	dst = append(dst, `,"created_at":`...)
	dst = strconv.AppendInt(dst, v.created, 10)
	if st == "completed" {
		dst = append(dst, `,"completed_at":`...)
		dst = strconv.AppendInt(dst, v.created+1, 10)
	} else {
		dst = append(dst, `,"completed_at":null`...)
	}
	dst = append(dst, `,"expires_at":null,"seconds":"`...)
	dst = append(dst, v.seconds...)
	dst = append(dst, `","size":"`...)
	dst = append(dst, v.size...)
	return append(dst, `","remixed_from_video_id":null,"error":null}`...)
}

func (s *Server) serveVideoCreate(ctx *fasthttp.RequestCtx, k *Knobs) {
	body := ctx.PostBody()
	var v [4][]byte
	if !rawjson.Valid(body) || rawjson.ScanTop(body, videoKeys, v[:]) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgBadJSON)
		return
	}
	if rawjson.KindOf(v[1]) != rawjson.String || len(v[1]) < 3 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Missing required parameter: 'prompt'.")
		return
	}
	str := func(raw []byte, def string) string {
		if rawjson.KindOf(raw) == rawjson.String {
			u, _ := rawjson.AppendUnquote(nil, raw)
			return string(u)
		}
		return def
	}
	id := s.seq.Add(1)
	t := &mockVideo{id: "video_mock" + strconv.FormatUint(id, 10), model: str(v[0], "sora-2") + k.ModelSuffix,
		seconds: str(v[2], "4"), size: str(v[3], "720x1280"), created: time.Now().Unix()}
	s.videos.mu.Lock()
	if s.videos.tasks == nil {
		s.videos.tasks = map[string]*mockVideo{}
	}
	s.videos.tasks[t.id] = t
	s.videos.order = append(s.videos.order, t.id)
	out := t.append(nil)
	s.videos.mu.Unlock()
	setRequestID(ctx, id)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(out)
}

// videoID returns the id and what follows it of .../videos/{id}[/sub].
func videoID(path []byte) (id, sub string) {
	i := bytes.LastIndex(path, []byte("/videos/"))
	if i < 0 {
		return "", ""
	}
	rest := string(path[i+len("/videos/"):])
	if j := bytes.IndexByte([]byte(rest), '/'); j >= 0 {
		return rest[:j], rest[j:]
	}
	return rest, ""
}

func (s *Server) serveVideoGet(ctx *fasthttp.RequestCtx, k *Knobs) {
	path := ctx.Path()
	if bytes.HasSuffix(path, strVideosPath) {
		s.serveVideoList(ctx)
		return
	}
	id, sub := videoID(path)
	t := s.video(id)
	if t == nil || (sub != "" && sub != "/content") {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusNotFound, "Video with id '"+id+"' not found.")
		return
	}
	if sub == "" {
		s.videos.mu.Lock()
		t.polls++
		out := t.append(nil)
		s.videos.mu.Unlock()
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(out)
		return
	}
	s.videos.mu.Lock()
	st, _ := t.status()
	s.videos.mu.Unlock()
	if st != "completed" {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Video is not ready yet, use GET /v1/videos/{video_id} to check status.")
		return
	}
	kk := *k
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("video/mp4")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.stats.inFlight.Add(-1)
		size := kk.ChunkSize * speechChunkScale
		for i := 0; i < kk.Chunks; i++ {
			if i > 0 && kk.ChunkDelay > 0 && !s.sleep(kk.ChunkDelay) {
				return
			}
			if _, err := w.Write(appendFiller(nil, i*size, size)); err != nil || w.Flush() != nil {
				return
			}
		}
	})
}

func (s *Server) serveVideoList(ctx *fasthttp.RequestCtx) {
	after := string(ctx.QueryArgs().Peek("after"))
	limit := 20
	if n, err := strconv.Atoi(string(ctx.QueryArgs().Peek("limit"))); err == nil && n > 0 {
		limit = n
	}
	s.videos.mu.Lock()
	out := append([]byte(nil), `{"object":"list","data":[`...)
	n, started := 0, after == ""
	var first, last string
	more := false
	for i := len(s.videos.order) - 1; i >= 0; i-- {
		id := s.videos.order[i]
		t := s.videos.tasks[id]
		if t == nil {
			continue
		}
		if !started {
			started = id == after
			continue
		}
		if n == limit {
			more = true
			break
		}
		if n > 0 {
			out = append(out, ',')
		} else {
			first = id
		}
		out, last = t.append(out), id
		n++
	}
	s.videos.mu.Unlock()
	out = append(out, `],"first_id":`...)
	out = appendNullable(out, first)
	out = append(out, `,"last_id":`...)
	out = appendNullable(out, last)
	out = append(out, `,"has_more":`...)
	out = strconv.AppendBool(out, more)
	out = append(out, '}')
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(out)
}

func appendNullable(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return rawjson.AppendQuote(dst, s)
}

func (s *Server) serveVideoDelete(ctx *fasthttp.RequestCtx, _ *Knobs) {
	id, sub := videoID(ctx.Path())
	s.videos.mu.Lock()
	t := s.videos.tasks[id]
	if t != nil && sub == "" {
		delete(s.videos.tasks, id)
	}
	s.videos.mu.Unlock()
	if t == nil || sub != "" {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusNotFound, "Video with id '"+id+"' not found.")
		return
	}
	out := append([]byte(`{"id":`), rawjson.AppendQuote(nil, id)...)
	out = append(out, `,"object":"video.deleted","deleted":true}`...)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(out)
}
