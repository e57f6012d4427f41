package pii

import (
	"context"
	"strings"
	"testing"

	"gw/edge/guard"
)

// chatTexts is a realistic ~4 KB chat request's texts (system prompt,
// several turns, a tool result) with nothing any benchmark pattern matches (a copy of
// keyword's: the two kinds' figures add up to the chain's).
func chatTexts() []guard.Text {
	msgs := []struct {
		role guard.Role
		s    string
	}{
		{guard.RoleSystem, "You are a helpful assistant for an online bookstore. Answer questions about orders, shipping and returns politely and concisely. When you are unsure, say so and offer to connect the customer with a human agent. Never invent order details; use the tools provided to look them up. Keep answers under two hundred words unless the customer asks for more detail."},
		{guard.RoleUser, "Hi there! I ordered three books last week and only two of them arrived. The package looked fine from the outside, but the third book, a hardcover edition of a history of the Roman Empire, was missing. Can you tell me what happened and whether it is coming separately?"},
		{guard.RoleAssistant, "I'm sorry to hear that one of your books is missing. Sometimes items from the same order ship from different warehouses and arrive in separate packages. Let me look up your order to check whether the hardcover was sent on its own. Could you confirm the name on the order so I can find it?"},
		{guard.RoleUser, "Sure, the order is under my name, Margaret Thompson. I placed it on Tuesday morning and chose standard shipping because I was not in a hurry. The confirmation mentioned all three titles, so I assumed they would come together in one box."},
		{guard.RoleTool, "order lookup result: status shipped in two parcels; parcel one delivered on Friday with two items; parcel two in transit, expected delivery Monday; carrier tracking available on the order page; no exceptions recorded by the carrier; warehouse notes mention the hardcover was restocked late."},
		{guard.RoleAssistant, "Thank you, Margaret. I found your order. The hardcover history book was shipped separately because it was restocked a little later at our warehouse. It is in transit now and is expected to arrive on Monday. You can follow its progress from the order page, where the carrier's tracking details are listed. Is there anything else I can help you with today?"},
		{guard.RoleUser, "That is a relief, thank you. One more question: if the book arrives damaged, how do returns work? I would rather exchange it for a new copy than get a refund, because it is a gift for my father's birthday next month and I really want him to have it."},
		{guard.RoleAssistant, "If the book arrives damaged, you can request an exchange from the order page within thirty days of delivery. Choose the damaged item, select exchange instead of refund, and we will send a replacement copy as soon as one is available, usually within a few days. You will receive a prepaid return label for the damaged copy, so the exchange costs you nothing. Since it is a gift, you can also add gift wrapping to the replacement at no extra charge."},
		{guard.RoleUser, "Wonderful. Could you also recommend two or three other books about ancient history that my father might enjoy? He likes long narrative histories more than textbooks, and he has already read most of the classic authors on the Roman Republic. Something about Greece or Persia might be a nice change for him this year."},
		{guard.RoleAssistant, "Here are a few narrative histories he might enjoy: a sweeping account of the Persian Wars told from both sides, a biography of Alexander that reads like a novel, and a history of Athens at the height of its power with rich detail about daily life. All three are available in hardcover and can be added to a gift order with wrapping. Would you like me to check which of them could arrive before his birthday?"},
		{guard.RoleUser, "Yes please, check the first two and tell me the delivery estimates for standard shipping to the same address as my last order. If either would arrive after the twentieth, I will choose express shipping for that one instead."},
	}
	texts := make([]guard.Text, len(msgs))
	for i, m := range msgs {
		texts[i] = guard.Text{Role: m.role, Data: []byte(m.s)}
	}
	return texts
}

func BenchmarkPII(b *testing.B) {
	c := mustNew(b, allOpts())
	full := chatTexts()
	n := 0
	for _, t := range full {
		n += len(t.Data)
	}
	window := []guard.Text{{Role: guard.RoleAssistant, Data: full[7].Data[:200]}}
	for _, bc := range []struct {
		name  string
		texts []guard.Text
		bytes int
	}{
		{"chat4KB", full, n},
		{"window200B", window, 200},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := &guard.Request{Texts: bc.texts}
			var v guard.Verdict
			ctx := context.Background()
			b.SetBytes(int64(bc.bytes))
			b.ReportAllocs()
			for b.Loop() {
				v.Reset()
				if err := c.Check(ctx, req, &v); err != nil || v.Action != guard.Allow {
					b.Fatalf("got %v %q %v", v.Action, v.Rule, err)
				}
			}
		})
	}
}

// BenchmarkPIIMask: a 4 KB request with an e-mail, a phone number and an IP
// address to mask, reusing the verdict's buffers.
func BenchmarkPIIMask(b *testing.B) {
	c := mustNew(b, allOpts())
	texts := chatTexts()
	texts[3].Data = append([]byte("reach me at margaret.t@example.com or 13812345678, "), texts[3].Data...)
	texts[4].Data = append([]byte("client 203.0.113.7 "), texts[4].Data...)
	req := &guard.Request{Texts: texts}
	var v guard.Verdict
	b.ReportAllocs()
	for b.Loop() {
		v.Reset()
		if err := c.Check(context.Background(), req, &v); err != nil || v.Action != guard.Rewrite {
			b.Fatalf("got %v %v", v.Action, err)
		}
	}
}

// BenchmarkPIIAdversarial: 64 KB texts built to make a careless scanner
// quadratic (many BEGIN lines without END, many '@' before long dotted
// domains, long colon tokens, chained JWT-like segments) stay linear.
func BenchmarkPIIAdversarial(b *testing.B) {
	c := mustNew(b, allOpts())
	const size = 64 << 10
	rep := func(s string) []byte {
		out := make([]byte, 0, size+len(s))
		for len(out) < size {
			out = append(out, s...)
		}
		return out
	}
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"pem", rep("-----BEGIN PRIVATE KEY-----")},
		{"email", rep("x@" + strings.Repeat("a.", 120) + "-")},
		{"colons", rep("1:2:3:4:5:6:7:8:9:")},
		{"jwt", rep("eyJabcdefghij.")},
		{"digits", rep("1234 ")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := &guard.Request{Texts: []guard.Text{{Data: bc.data}}}
			var v guard.Verdict
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			for b.Loop() {
				v.Reset()
				_ = c.Check(context.Background(), req, &v)
			}
		})
	}
}
