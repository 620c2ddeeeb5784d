// Package chattest holds a long everyday conversation for the tests and
// benchmarks that need one (a conversation's cost late against early, the
// offline model's reading of a long history): the same turns wherever a
// long chat is simulated, so their figures speak of the same text.
package chattest

// Turns is a conversation's questions and answers, alternately, in
// English and Chinese, on the everyday topics a long chat wanders through;
// its facts sit in the first turns. Callers number them to make a
// conversation as long as they need.
var Turns = []string{
	"My name is Chen Jie and I work as a nurse in Chengdu.", "Nice to meet you, Chen Jie. Nursing in a big city must keep you busy.",
	"我周末喜欢去青城山徒步。", "青城山的山路很适合周末徒步，记得带足水。",
	"My sister Anna is moving to Berlin in March.", "Berlin in spring is lovely; she will find plenty of parks.",
	"我最近在学做川菜，麻婆豆腐总是做得太咸。", "可以少放一点豆瓣酱，最后再尝味道调整。",
	"How long should I boil an egg for a soft yolk?", "About six minutes from boiling water gives a soft, runny yolk.",
	"我的猫叫小白，今年三岁了。", "小白正是活泼的年纪，多陪它玩逗猫棒吧。",
	"Can you recommend a book about the history of tea?", "A good start is a general history of tea that follows it from China to the rest of the world.",
	"明天成都会下雨吗？我要不要带伞？", "我无法查看实时天气，出门前看一下天气预报比较稳妥。",
	"What is a good way to learn to play the guitar?", "Practise a few chords every day and learn simple songs you like.",
	"我每天早上六点起床跑步五公里。", "坚持晨跑很好，注意跑前热身和跑后拉伸。",
	"Which train goes from Chengdu to Chongqing fastest?", "The high-speed trains take a little over an hour between the two cities.",
	"帮我想一个给妈妈的生日礼物。", "可以送一条围巾或者一起拍一套家庭照片，很有纪念意义。",
	"Is it better to water plants in the morning or the evening?", "Morning is usually better: the water soaks in before the heat of the day.",
	"我的英语口语不太好，怎么练习？", "每天跟读十分钟，再找机会和别人多说。",
	"Thanks, that is really helpful.", "You are welcome. Ask me any time.",
	"我下个月要去杭州出差三天。", "杭州很美，出差之余可以去西湖边走走。",
}
